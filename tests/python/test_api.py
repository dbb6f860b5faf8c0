"""The package's surface: the stubs name exactly what the module holds, every public function and
class carries a docstring with an example, and the package folder is complete.
"""
import ast
import inspect
import os
import pydoc

import posemb

PACKAGE_DIR = os.path.dirname(posemb.__file__)


def public_names(obj):
    """Public names, submodules (posemb.nn, pure Python with its own docstrings) aside."""
    return {name for name in dir(obj)
            if not name.startswith("_") and not inspect.ismodule(getattr(obj, name))}


def stub_tree():
    with open(os.path.join(PACKAGE_DIR, "__init__.pyi")) as f:
        return ast.parse(f.read())


def stub_names():
    """Top-level names of __init__.pyi, and the public members of each class."""
    top, members = set(), {}
    for node in stub_tree().body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")} | \
                                 {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
    return top, members


def module_classes():
    return {name: getattr(posemb, name) for name in public_names(posemb) if inspect.isclass(getattr(posemb, name))}


def test_package_folder():
    for name in ("__init__.py", "__init__.pyi", "py.typed"):
        assert os.path.isfile(os.path.join(PACKAGE_DIR, name))
    assert any(f.startswith("_posemb.") and f.endswith(".so") for f in os.listdir(PACKAGE_DIR))


def test_stubs_name_the_module():
    top, members = stub_names()
    assert top - {"__version__"} == public_names(posemb)
    for name, cls in module_classes().items():
        if name == "Error":
            continue
        wanted = {m for m in public_names(cls)}
        assert members[name] == wanted, name


def test_stub_signatures_match():
    # Every stub function's parameter names are the binding's (pybind11 writes them in __doc__).
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            params = [a.arg for a in node.args.args + node.args.kwonlyargs]
            doc = getattr(posemb, node.name).__doc__
            signature = doc.splitlines()[0]
            for param in params:
                assert param + ":" in signature, (node.name, param, signature)


def test_docstrings_have_examples():
    for name in public_names(posemb):
        obj = getattr(posemb, name)
        if name == "Error":
            assert "names the parameter" in obj.__doc__
            continue
        if callable(obj):
            assert "Example" in (obj.__doc__ or ""), name
    assert "Example" in posemb.__doc__


def test_help_reads_well():
    text = pydoc.render_doc(posemb.apply_rope_, renderer=pydoc.plaintext)
    assert "apply_rope_(x: object, positions: object, source: object, layout: str = 'bshd'" in text
    assert "Rotates x in place" in text and ">>> posemb.apply_rope_(q, 0, spec)" in text


def test_version():
    assert posemb.__version__.count(".") == 2
    assert posemb.__version__ == posemb._posemb.__version__
