"""Put each case's published training script at scenarios/scripts/<case>/train.py.

The scripts are other projects' code (Apache-2.0), so this repository does not carry them: each
case's `source.json` pins the file (repository, path, commit, sha256 of the published bytes) and
this program fetches it, checks the hash, and writes train.py under a header naming the source:

    python scenarios/scripts/get_scripts.py                      # from GitHub (raw files)
    python scenarios/scripts/get_scripts.py --source-root tensorflow/docs=/path/to/docs-clone

`--source-root REPO=DIR` reads REPO's files from DIR instead: a git directory (read with
`git show COMMIT:PATH`) or a plain folder holding the repository's paths.

A notebook (`.ipynb`) is exported as its code cells in order, one blank line apart; an IPython
line (`!ls ...`, `%load_ext ...`) becomes a comment (as jupytext does), since plain Python cannot
run it. A case whose data cannot be substituted without touching the script lists
its edits in `source.json` (`edits`: exact old line, new line); each new line carries
`# pipediag: local data`, and the header counts them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "# pipediag: local data"


def case_names() -> list[str]:
    return sorted(d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "source.json")))


def read_source(case: str) -> dict:
    with open(os.path.join(HERE, case, "source.json")) as f:
        return json.load(f)


def published_bytes(source: dict, roots: dict[str, str]) -> bytes:
    """The file as published at the pinned commit."""
    repo, path, commit = source["repo"], source["path"], source["commit"]
    root = roots.get(repo)
    if root is None:
        url = f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    if os.path.isdir(os.path.join(root, "objects")) or os.path.isdir(os.path.join(root, ".git")):
        return subprocess.run(["git", "--git-dir", _git_dir(root), "show", f"{commit}:{path}"],
                              check=True, capture_output=True).stdout
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


def _git_dir(root: str) -> str:
    return os.path.join(root, ".git") if os.path.isdir(os.path.join(root, ".git")) else root


def export_notebook(data: bytes) -> str:
    """A notebook's code cells as one script (IPython lines commented out)."""
    cells = [c for c in json.loads(data)["cells"] if c["cell_type"] == "code"]
    parts = []
    for cell in cells:
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        lines = []
        for line in text.split("\n"):
            stripped = line.lstrip()
            lines.append(f"# {line}" if stripped.startswith(("!", "%")) else line)
        parts.append("\n".join(lines).rstrip("\n"))
    return "\n\n".join(parts) + "\n"


def apply_edits(text: str, edits: list[list[str]]) -> str:
    for old, new in edits:
        if text.count(old) != 1:
            raise SystemExit(f"edit not applicable (found {text.count(old)} times): {old!r}")
        if MARK not in new:
            raise SystemExit(f"an edit must carry {MARK!r}: {new!r}")
        text = text.replace(old, new)
    return text


def header(source: dict) -> str:
    lines = [
        f"# Published training script, as is: https://github.com/{source['repo']}/blob/{source['commit']}/{source['path']}",
        f"# Repository {source['repo']}, commit {source['commit']}, license {source['license']}.",
        f"# sha256 of the published file: {source['sha256']}.",
    ]
    if source["path"].endswith(".ipynb"):
        lines.append("# Exported from the notebook: code cells in order; IPython lines (! and %) commented out.")
    edits = source.get("edits", [])
    lines.append(f"# Edits: {len(edits)}" + (f" (each marked '{MARK}')." if edits else "."))
    lines.append("# Written by scenarios/scripts/get_scripts.py; not part of the pipediag repository.")
    return "\n".join(lines) + "\n\n"


def write_case(case: str, roots: dict[str, str]) -> str:
    source = read_source(case)
    data = published_bytes(source, roots)
    digest = hashlib.sha256(data).hexdigest()
    if digest != source["sha256"]:
        raise SystemExit(f"{case}: sha256 {digest} is not the pinned {source['sha256']}\n"
                         f"HINT: the source at {source['repo']}@{source['commit']} is not the one this case was "
                         "measured with; check --source-root.")
    text = export_notebook(data) if source["path"].endswith(".ipynb") else data.decode("utf-8")
    text = apply_edits(text, source.get("edits", []))
    target = os.path.join(HERE, case, "train.py")
    with open(target, "w") as f:
        f.write(header(source) + text)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--source-root", action="append", default=[], metavar="REPO=DIR",
                        help="read REPO from a local git directory or folder instead of GitHub")
    args = parser.parse_args(argv)
    roots = dict(item.split("=", 1) for item in args.source_root)
    for case in args.cases or case_names():
        print(write_case(case, roots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
