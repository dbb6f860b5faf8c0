// The Rotary Fields page in headless Debian Chromium, against the native example.
//
//   node browser_test.js --page build/playground/index.html --native PATH/rotary_fields
//                        --chromium /usr/bin/chromium --screenshots DIR
//
// For every preset: loads index.html?preset=NAME from file://, checks that each data-metric
// equals the native `rotary_fields --preset NAME --json` to 1e-9 relative, that the calibration
// row shows the same concentration, and saves DIR/NAME.png (1280 x 800 window, whole page).
// Then moves sliders with the keyboard and checks the metrics become the native values for the
// settings in the updated URL, that this URL shows the same view in a fresh page, and that a bad
// URL value shows a message naming the setting with nothing computed from it (the tab's last
// good view stays, or the default view in a new tab). Any request that leaves file:// or data:
// fails the test; so do an error or console error in the page and a browser that cannot start.
// The browser is driven over the DevTools protocol by cdp.js (Node's built-in modules only).
"use strict";

const {execFileSync} = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const {Browser} = require("./cdp");

const RELATIVE_TOLERANCE = 1e-9;
// The circular-linear fit maximises a resultant length that is flat at its maximum, so its
// argmax is determined to about sqrt(machine epsilon): compared to 1e-6 relative.
const FIT_TOLERANCE = 1e-6;

function parseArgs() {
  const args = {};
  const argv = process.argv.slice(2);
  for (let k = 0; k < argv.length; k += 2) {
    if (!argv[k].startsWith("--") || k + 1 >= argv.length) throw new Error("usage: see the header");
    args[argv[k].slice(2)] = argv[k + 1];
  }
  for (const name of ["page", "native", "chromium", "screenshots"]) {
    if (!args[name]) throw new Error("missing --" + name);
  }
  return args;
}

let failures = 0;
function check(ok, message) {
  if (!ok) {
    failures += 1;
    console.log("FAIL: " + message);
  }
}

function relativeDifference(a, b) {
  if (a === b) return 0;
  return Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b));
}

// The native example's JSON for name = value settings.
function nativeJson(native, settings) {
  const flags = [];
  for (const [name, value] of settings) flags.push("--" + name, value);
  return JSON.parse(execFileSync(native, [...flags, "--json"], {encoding: "utf8"}));
}

async function openPage(browser, url, requests) {
  const page = await browser.newPage();
  await page.setViewport(1280, 800);
  page.on("pageerror", (text) => check(false, url + ": page error: " + text));
  page.on("console", (message) => {
    if (message.type === "error") check(false, url + ": console error: " + message.text);
  });
  page.on("request", (requestUrl) => requests.push(requestUrl));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]", 20000);
  return page;
}

// {name: number} of every [data-metric] element, and the texts as shown.
async function pageMetrics(page) {
  return page.$$eval("[data-metric]", (cells) =>
    Object.fromEntries(cells.map((c) => [c.dataset.metric, c.textContent.trim()])));
}

async function pageValue(page, name) {
  return Number(await page.$eval(`[data-value="${name}"]`, (c) => c.dataset.exact));
}

async function computeMs(page) {
  return Number(await page.$eval("#status", (s) => s.dataset.computeMs));
}

// Compares every data-metric with the native JSON; returns the largest relative difference.
function compareMetrics(label, shown, native) {
  let worst = 0;
  const names = Object.keys(shown);
  for (const required of ["peak", "mean", "nearby", "distant", "concentration", "width", "drift"]) {
    check(names.includes(required), `${label}: no data-metric="${required}"`);
  }
  for (const name of names) {
    const text = shown[name];
    const digits = text.replace(/^-/, "").replace(/e.*$/, "").replace(".", "").replace(/^0+/, "");
    check(digits.length >= 6, `${label}: ${name} = "${text}" has fewer than 6 significant digits`);
    check(name in native, `${label}: ${name} missing from the native JSON`);
    const difference = relativeDifference(Number(text), native[name]);
    worst = Math.max(worst, difference);
    check(difference <= RELATIVE_TOLERANCE,
          `${label}: ${name} page ${text} native ${native[name]} (relative ${difference.toExponential(2)})`);
  }
  return worst;
}

function urlSettings(url) {
  return [...new URL(url).searchParams];
}

async function main() {
  const args = parseArgs();
  const pageUrl = "file://" + path.resolve(args.page);
  fs.mkdirSync(args.screenshots, {recursive: true});
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "posemb-chromium-"));
  const started = Date.now();
  const requests = [];
  let worst = 0, worstFit = 0;
  const timings = [];
  let browser = null;
  try {
    // A browser that cannot start throws here: the test fails.
    browser = await Browser.launch({
      executable: args.chromium,
      profile,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--disable-default-apps", "--hide-scrollbars", "--mute-audio",
             "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
             "--disable-backgrounding-occluded-windows", "--force-color-profile=srgb"],
    });
    console.log("browser: " + (await browser.version()));

    // 1. Every preset against the native example.
    const probe = await openPage(browser, pageUrl, requests);
    const presets = await probe.$$eval("#preset option", (o) => o.map((x) => x.value).filter((v) => v !== "custom"));
    await probe.close();
    check(presets.length === 5, "expected 5 presets, the page lists " + presets.join(", "));
    for (const preset of presets) {
      const page = await openPage(browser, `${pageUrl}?preset=${preset}`, requests);
      const fullMs = await computeMs(page);
      const native = nativeJson(args.native, [["preset", preset]]);
      worst = Math.max(worst, compareMetrics(preset, await pageMetrics(page), native));
      for (const name of ["fit-slope", "fit-length"]) {
        const difference = relativeDifference(await pageValue(page, name), native[name]);
        worstFit = Math.max(worstFit, difference);
        check(difference <= FIT_TOLERANCE, `${preset}: ${name} differs by ${difference}`);
      }
      const calibration = Number(await page.$eval(`[data-calibration="${preset}"]`, (c) => c.dataset.exact));
      check(relativeDifference(calibration, native.concentration) <= RELATIVE_TOLERANCE,
            `${preset}: calibration concentration ${calibration} vs native ${native.concentration}`);
      const result = await page.$eval(`tr[data-preset="${preset}"] td:last-child`, (c) => c.textContent);
      check(result === "PASS", `${preset}: calibration shows ${result}`);
      await page.screenshot(path.join(args.screenshots, preset + ".png"), {fullPage: true});
      // One field update at the preset's size: the seed slider one step.
      await page.focus("#control-seed");
      await page.press("ArrowRight");
      await page.waitForFunction(() => new URL(location.href).searchParams.has("seed"));
      timings.push({preset, fullMs, fieldMs: await computeMs(page)});
      await page.close();
    }
    check(await (async () => {
      const page = await openPage(browser, pageUrl, requests);
      const text = await page.$eval("#ordering-result", (c) => c.textContent);
      await page.close();
      return text === "PASS";
    })(), "ordering check does not show PASS");

    // 2. Sliders: similarity, slope and drift head dimension, then the native values for the URL.
    const page = await openPage(browser, `${pageUrl}?preset=baseline`, requests);
    const before = await pageMetrics(page);
    for (const [control, presses] of [["similarity", 3], ["slope", 2], ["drift-dim", 4]]) {
      await page.focus("#control-" + control);
      for (let k = 0; k < presses; ++k) await page.press("ArrowLeft");
      // Slider moves are applied once per animation frame.
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      timings.push({control, ms: await computeMs(page)});
    }
    const movedUrl = await page.url();
    const moved = await pageMetrics(page);
    const settings = urlSettings(movedUrl);
    console.log("after the sliders: " + movedUrl.slice(movedUrl.indexOf("?")));
    check(JSON.stringify(settings) === JSON.stringify(
            [["preset", "baseline"], ["similarity", "0.87"], ["slope", "-370"], ["drift-dim", "56"]]),
          "the sliders did not move to similarity 0.87, slope -370, drift-dim 56: " + movedUrl);
    check(moved.peak !== before.peak && moved.mean !== before.mean, "the metrics did not change");
    check(moved["sinusoidal-spread"] !== before["sinusoidal-spread"], "the drift panel did not change");
    const movedNative = nativeJson(args.native, settings);
    worst = Math.max(worst, compareMetrics("after the sliders", moved, movedNative));
    const fitDifference = relativeDifference(await pageValue(page, "fit-slope"), movedNative["fit-slope"]);
    worstFit = Math.max(worstFit, fitDifference);
    check(fitDifference <= FIT_TOLERANCE, "after the sliders: fit-slope differs by " + fitDifference);
    await page.screenshot(path.join(args.screenshots, "after-sliders.png"), {fullPage: true});
    await page.close();

    // 3. The URL reproduces the view in a fresh page.
    const fresh = await openPage(browser, movedUrl, requests);
    const reproduced = await pageMetrics(fresh);
    check(JSON.stringify(reproduced) === JSON.stringify(moved),
          "the URL does not reproduce the view: " + JSON.stringify(reproduced));
    const freshUrl = await fresh.url();
    check(freshUrl === movedUrl, "the fresh page rewrote the URL to " + freshUrl);
    await fresh.close();

    // 4. Bad values: a message naming the setting; the default view, nothing computed from it.
    const defaultPage = await openPage(browser, pageUrl, requests);
    const defaults = await pageMetrics(defaultPage);
    await defaultPage.close();
    for (const [query, setting] of [["seed=abc", "seed"], ["pairs=0", "pairs"],
                                    ["preset=long-range&similarity=2", "similarity"],
                                    ["len=1e9", "len"], ["bogus=1", "setting"]]) {
      const bad = await openPage(browser, `${pageUrl}?${query}`, requests);
      const shown = await bad.$eval("#error", (e) => ({
        visible: e.classList.contains("shown"), text: e.textContent, setting: e.dataset.setting}));
      check(shown.visible && shown.setting === setting &&
            (setting === "setting" || shown.text.includes(setting)),
            `?${query}: expected a message naming ${setting}, got ${JSON.stringify(shown)}`);
      check(JSON.stringify(await pageMetrics(bad)) === JSON.stringify(defaults),
            `?${query}: the view is not the default one`);
      await bad.close();
    }
    // In a tab that showed a good view, a bad URL keeps that view.
    const tab = await openPage(browser, `${pageUrl}?preset=long-range&seed=7`, requests);
    const good = await pageMetrics(tab);
    await tab.goto(`${pageUrl}?preset=long-range&seed=-7`);
    await tab.waitForSelector("body[data-ready=true]", 20000);
    const kept = await tab.$eval("#error", (e) => ({setting: e.dataset.setting, text: e.textContent}));
    check(kept.setting === "seed" && kept.text.includes("last good"),
          "?seed=-7 after a good view: " + JSON.stringify(kept));
    check(JSON.stringify(await pageMetrics(tab)) === JSON.stringify(good),
          "?seed=-7 after a good view: the last good view is not kept");
    const tabUrl = await tab.url();
    check(tabUrl.endsWith("?preset=long-range&seed=7"), "the URL is not the good view's: " + tabUrl);
    await tab.screenshot(path.join(args.screenshots, "bad-url.png"));
    await tab.close();
  } finally {
    if (browser) await browser.close();
    fs.rmSync(profile, {recursive: true, force: true});
  }

  const external = requests.filter((u) => !u.startsWith("file:") && !u.startsWith("data:"));
  check(external.length === 0, "requests beyond file:// and data: " + external.join(" "));
  console.log("largest relative difference page vs native (data-metric): " + worst.toExponential(3));
  console.log("largest relative difference of the precession fit: " + worstFit.toExponential(3));
  for (const t of timings) {
    if (t.preset) {
      console.log(`compute ${t.preset}: whole view ${t.fullMs.toFixed(1)} ms, ` +
                  `score-matrix update ${t.fieldMs.toFixed(2)} ms`);
    } else {
      console.log(`compute after moving ${t.control} (baseline): ${t.ms.toFixed(2)} ms`);
    }
  }
  console.log(`requests: ${requests.length}, none beyond file:// and data:`.replace(
    ", none", external.length ? ", some" : ", none"));
  console.log(`browser test: ${((Date.now() - started) / 1000).toFixed(1)} s, ${failures} failures`);
  process.exitCode = failures === 0 ? 0 : 1;
}

main().catch((error) => {
  console.log("FAIL: " + (error && error.stack ? error.stack : error));
  process.exitCode = 1;
});
