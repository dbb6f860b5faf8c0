"""Converts Hugging Face folders to GGUF (float32) with the pinned llama.cpp's own converter.

    python convert.py LLAMA_CPP_DIR OUT.json MODEL_DIR=OUT.gguf ...

LLAMA_CPP_DIR is the sdist's vendor/llama.cpp (convert_hf_to_gguf.py, conversion/, gguf-py/).
The tiny models carry no tokenizer, so every model class's `set_vocab` is replaced by the
converter's own `_set_vocab_none` (tokenizer.ggml.model = "none": llama.cpp's vocab type NONE,
which its loader accepts) plus `{arch}.vocab_size` (the converter's add_vocab_size; the loader's
dummy-token count); everything else is the converter's unchanged `main()`. OUT.json maps
each MODEL_DIR's name to "ok" or the converter's own message (its last error log line or exception).
All models run in one process: importing torch dominates a conversion's time.
"""

from __future__ import annotations

import json
import logging
import os
import sys


def _set_vocab_none_sized(self) -> None:
    """The converter's no-vocab path plus {arch}.vocab_size: for vocab type NONE llama.cpp's
    loader makes that many dummy tokens (llama_vocab::impl::load, src/llama-vocab.cpp), and the
    graph builders size token_embd / output by the token count (e.g. src/models/qwen2.cpp)."""
    self._set_vocab_none()
    self.gguf_writer.add_vocab_size(self.find_hparam(["vocab_size"]))


def _no_vocab(model_class: type) -> type:
    """Every class of model_class's MRO that defines set_vocab gets the sized no-vocab path, and
    so do the classes it delegates to: Mistral3Model keeps the model in `impl`, an instance of a
    nested class (Ministral3Model, a LlamaModel; conversion/mistral3.py), whose set_vocab would
    otherwise look for a tokenizer unless an earlier case had patched LlamaModel."""
    for cls in model_class.__mro__:
        if "set_vocab" in cls.__dict__:
            cls.set_vocab = _set_vocab_none_sized
        for nested in list(cls.__dict__.values()):
            if isinstance(nested, type) and nested is not model_class and \
                    issubclass(nested, model_class.__mro__[-2]):
                _no_vocab(nested)
    return model_class


class _LastError(logging.Handler):
    """Keeps the converter's last ERROR log message (it logs, then calls sys.exit(1))."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.message = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.message = record.getMessage()


def convert_one(converter, model_dir: str, out_file: str, errors: _LastError) -> str:
    """Runs the converter's main() on one folder: "ok" or its message."""
    errors.message = ""
    sys.argv = ["convert_hf_to_gguf.py", model_dir, "--outtype", "f32", "--outfile", out_file]
    try:
        converter.main()
        return "ok"
    except SystemExit as stop:
        return errors.message or f"exit {stop.code}"
    except Exception as error:  # the converter's own exception, reported as is
        return f"{type(error).__name__}: {error}"


def main() -> None:
    llama_cpp_dir, out_json, *pairs = sys.argv[1:]
    sys.path.insert(0, llama_cpp_dir)
    import convert_hf_to_gguf as converter

    get_model_class = converter.get_model_class
    converter.get_model_class = lambda *a, **k: _no_vocab(get_model_class(*a, **k))
    errors = _LastError()
    logging.getLogger().addHandler(errors)
    results = {}
    for pair in pairs:
        model_dir, out_file = pair.split("=", 1)
        case = os.path.basename(os.path.normpath(model_dir))
        results[case] = convert_one(converter, model_dir, out_file, errors)
        print(f"{case}: {results[case]}", file=sys.stderr, flush=True)
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
