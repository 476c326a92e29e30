"""The README's Python examples run (tests/doc_examples.py runs its C, JSON
and shell blocks; these are the Python ones)."""
import os
import re
import shutil

from conftest import ROOT


def python_blocks():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_readme_python_examples(tmp_path, capsys):
    blocks = python_blocks()
    assert blocks, "README.md has no ```python block"
    (tmp_path / "plugins").mkdir(mode=0o700)
    shutil.copy(ROOT / "plugins" / "saxpy.json", tmp_path / "plugins")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for b in blocks:
            exec(compile(b, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "<string> 1 69 params" in out
