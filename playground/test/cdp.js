// A Chrome DevTools Protocol client over --remote-debugging-pipe, with the small page API the
// browser test uses. Node's built-in modules only.
//
// The browser reads commands on its file descriptor 3 and writes replies and events on 4, each
// message one JSON object followed by a NUL byte. Pages are attached in flat mode: a page's
// commands and events travel on the same pipe, tagged with its sessionId.
// Protocol: https://chromedevtools.github.io/devtools-protocol/ (Target, Page, Runtime, Network,
// Log, Emulation, Input, Browser domains).
"use strict";

const {spawn} = require("child_process");
const {EventEmitter} = require("events");
const fs = require("fs");

const COMMAND_TIMEOUT_MS = 30000;
const POLL_MS = 25;
// Input.dispatchKeyEvent needs the Windows virtual key code for the browser to act on a key.
const KEY_CODES = {ArrowLeft: 37, ArrowRight: 39};

// promise, or an Error naming `what` after ms milliseconds.
function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Commands with ids and their replies, and events, on the pair of pipes.
class Connection extends EventEmitter {
  constructor(toBrowser, fromBrowser) {
    super();
    this.toBrowser = toBrowser;
    this.nextId = 1;
    this.pending = new Map();  // id -> {resolve, reject, method}
    this.parts = [];           // the message being received, before its NUL
    this.closed = null;        // the Error every later command fails with
    fromBrowser.setEncoding("utf8");
    fromBrowser.on("data", (chunk) => this.receive(chunk));
    // A broken pipe shows up as the browser's exit; the socket errors need no crash of their own.
    fromBrowser.on("error", () => {});
    toBrowser.on("error", () => {});
  }

  send(method, params = {}, sessionId = undefined, timeoutMs = COMMAND_TIMEOUT_MS) {
    if (this.closed) return Promise.reject(new Error(`${method}: ${this.closed.message}`));
    const id = this.nextId++;
    const reply = new Promise((resolve, reject) => this.pending.set(id, {resolve, reject, method}));
    this.toBrowser.write(JSON.stringify({id, method, params, sessionId}) + "\0");
    return withTimeout(reply, timeoutMs, method).finally(() => this.pending.delete(id));
  }

  receive(chunk) {
    let start = 0;
    for (let end; (end = chunk.indexOf("\0", start)) >= 0; start = end + 1) {
      this.parts.push(chunk.slice(start, end));
      const message = JSON.parse(this.parts.join(""));
      this.parts = [];
      this.dispatch(message);
    }
    if (start < chunk.length) this.parts.push(chunk.slice(start));
  }

  dispatch(message) {
    if (message.id === undefined) {
      this.emit("event", message);
      return;
    }
    const call = this.pending.get(message.id);
    if (!call) return;
    if (message.error) call.reject(new Error(`${call.method}: ${message.error.message}`));
    else call.resolve(message.result);
  }

  // Fails every pending and later command with error.
  close(error) {
    this.closed = error;
    for (const call of this.pending.values()) call.reject(new Error(`${call.method}: ${error.message}`));
  }
}

// The text of a Runtime.ExceptionDetails.
function exceptionText(details) {
  return (details.exception && details.exception.description) || details.text;
}

// One tab, attached in flat mode. Events: "pageerror" (text), "console" ({type, text}) for
// console calls and browser log entries, "request" (url) for every request the page makes.
class Page extends EventEmitter {
  constructor(browser, targetId, sessionId) {
    super();
    this.browser = browser;
    this.targetId = targetId;
    this.sessionId = sessionId;
    this.loads = 0;  // Page.loadEventFired count
  }

  send(method, params = {}, timeoutMs = COMMAND_TIMEOUT_MS) {
    return this.browser.send(method, params, this.sessionId, timeoutMs);
  }

  onEvent(method, params) {
    if (method === "Runtime.exceptionThrown") {
      this.emit("pageerror", exceptionText(params.exceptionDetails));
    } else if (method === "Runtime.consoleAPICalled") {
      const text = params.args.map((a) => ("value" in a ? String(a.value) : a.description || a.type));
      this.emit("console", {type: params.type, text: text.join(" ")});
    } else if (method === "Log.entryAdded") {
      this.emit("console", {type: params.entry.level, text: params.entry.text});
    } else if (method === "Network.requestWillBeSent") {
      this.emit("request", params.request.url);
    } else if (method === "Inspector.targetCrashed") {
      this.emit("pageerror", "the page's renderer crashed");
    } else if (method === "Page.loadEventFired") {
      this.loads += 1;
      this.emit("load");
    }
  }

  async setViewport(width, height) {
    await this.send("Emulation.setDeviceMetricsOverride",
                    {width, height, deviceScaleFactor: 1, mobile: false});
  }

  // Navigates and waits for the load event of the new document.
  async goto(url, timeoutMs = COMMAND_TIMEOUT_MS) {
    const before = this.loads;
    const navigation = await this.send("Page.navigate", {url}, timeoutMs);
    if (navigation.errorText) throw new Error(`navigating to ${url}: ${navigation.errorText}`);
    await withTimeout(new Promise((resolve) => {
      const loaded = () => {
        if (this.loads === before) return;
        this.off("load", loaded);
        resolve();
      };
      this.on("load", loaded);
      loaded();
    }), timeoutMs, "the load event of " + url);
  }

  // The value of fn(...args) run in the page (JSON arguments and result; promises awaited).
  async evaluate(fn, ...args) {
    const expression = `(${fn})(${args.map((a) => JSON.stringify(a)).join(", ")})`;
    const reply = await this.send("Runtime.evaluate",
                                  {expression, returnByValue: true, awaitPromise: true});
    if (reply.exceptionDetails) throw new Error("in the page: " + exceptionText(reply.exceptionDetails));
    return reply.result.value;
  }

  // fn(the first element matching selector), which must exist.
  $eval(selector, fn) {
    return this.evaluate(`(selector) => {
      const element = document.querySelector(selector);
      if (!element) throw new Error("no element matches " + selector);
      return (${fn})(element);
    }`, selector);
  }

  // fn([every element matching selector]).
  $$eval(selector, fn) {
    return this.evaluate(`(selector) => (${fn})([...document.querySelectorAll(selector)])`, selector);
  }

  // Polls fn() in the page until it is truthy. Evaluation errors (a document being replaced)
  // count as false until the timeout, whose message quotes the last one.
  async waitForFunction(fn, timeoutMs = COMMAND_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      try {
        if (await this.evaluate(fn)) return;
      } catch (error) {
        last = " (last: " + error.message + ")";
      }
      await sleep(POLL_MS);
    }
    throw new Error(`waiting for ${fn}: not true within ${timeoutMs} ms${last}`);
  }

  waitForSelector(selector, timeoutMs = COMMAND_TIMEOUT_MS) {
    return this.waitForFunction(`() => document.querySelector(${JSON.stringify(selector)}) !== null`,
                                timeoutMs);
  }

  focus(selector) {
    return this.$eval(selector, (element) => element.focus());
  }

  // One key down and up, as a user's key press (keys of KEY_CODES).
  async press(key) {
    if (!(key in KEY_CODES)) throw new Error("press: no key code for " + key);
    const event = {key, code: key, windowsVirtualKeyCode: KEY_CODES[key]};
    await this.send("Input.dispatchKeyEvent", {type: "rawKeyDown", ...event});
    await this.send("Input.dispatchKeyEvent", {type: "keyUp", ...event});
  }

  url() {
    return this.evaluate(() => location.href);
  }

  // A PNG of the viewport, or of the whole page (its CSS content size) with fullPage.
  async screenshot(file, {fullPage = false} = {}) {
    const params = {format: "png"};
    if (fullPage) {
      const {cssContentSize: size} = await this.send("Page.getLayoutMetrics");
      params.clip = {x: 0, y: 0, width: Math.ceil(size.width), height: Math.ceil(size.height), scale: 1};
      params.captureBeyondViewport = true;
    }
    const {data} = await this.send("Page.captureScreenshot", params);
    fs.writeFileSync(file, Buffer.from(data, "base64"));
  }

  async close() {
    await this.browser.send("Target.closeTarget", {targetId: this.targetId});
    this.browser.pages.delete(this.sessionId);
  }
}

// A headless browser process and its pipe connection.
class Browser {
  // Starts executable (Chromium) with profile as its user data directory and the extra args;
  // throws when it cannot start or does not answer within timeoutMs.
  static async launch({executable, profile, args = [], timeoutMs = COMMAND_TIMEOUT_MS}) {
    const child = spawn(executable,
                        ["--headless", "--remote-debugging-pipe", "--user-data-dir=" + profile,
                         ...args, "about:blank"],
                        {stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"]});
    const browser = new Browser(child);
    try {
      await browser.send("Browser.getVersion", {}, undefined, timeoutMs);
    } catch (error) {
      child.kill("SIGKILL");
      const output = browser.output.trim() ? "; its output:\n" + browser.output.trim() : "";
      throw new Error(`${executable} did not start: ${error.message}${output}`);
    }
    return browser;
  }

  constructor(child) {
    this.child = child;
    this.output = "";  // the last of the browser's stdout and stderr, for error messages
    this.pages = new Map();  // sessionId -> Page
    this.connection = new Connection(child.stdio[3], child.stdio[4]);
    this.connection.on("event", ({method, params, sessionId}) => {
      const page = this.pages.get(sessionId);
      if (page) page.onEvent(method, params);
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding("utf8");
      stream.on("data", (text) => { this.output = (this.output + text).slice(-4000); });
    }
    this.exited = new Promise((resolve) => {
      child.on("error", (error) => {
        this.connection.close(new Error("the browser did not run: " + error.message));
        resolve();
      });
      child.on("exit", (code, signal) => {
        this.connection.close(new Error(`the browser exited (code ${code}, signal ${signal})`));
        resolve();
      });
    });
  }

  send(method, params = {}, sessionId = undefined, timeoutMs = COMMAND_TIMEOUT_MS) {
    return this.connection.send(method, params, sessionId, timeoutMs);
  }

  async version() {
    return (await this.send("Browser.getVersion")).product;
  }

  // A new about:blank tab with the Page, Runtime, Network and Log events on.
  async newPage() {
    const {targetId} = await this.send("Target.createTarget", {url: "about:blank"});
    const {sessionId} = await this.send("Target.attachToTarget", {targetId, flatten: true});
    const page = new Page(this, targetId, sessionId);
    this.pages.set(sessionId, page);
    for (const domain of ["Page", "Runtime", "Network", "Log"]) await page.send(domain + ".enable");
    return page;
  }

  // Asks the browser to close, and kills it if it has not exited within timeoutMs.
  async close(timeoutMs = 10000) {
    await this.send("Browser.close", {}, undefined, timeoutMs).catch(() => {});
    const exited = await withTimeout(this.exited.then(() => true), timeoutMs, "Browser.close")
      .catch(() => false);
    if (!exited) this.child.kill("SIGKILL");
  }
}

module.exports = {Browser};
