"""Every code block of the README works as written.

Python blocks run in a fresh interpreter in an empty folder, and each ``print(...)  # text``
line must print ``text``. Shell blocks are not run (they start services and long jobs): each
command is checked instead. ``streamnb ...`` lines name real subcommands and options (their
``--help`` runs through the installed console script), ``make X`` names a target of the
Makefile, ``pip install SPEC`` names extras that pyproject.toml declares, a ``python -m MOD``
names an importable module and the paths it names exist, and any other first word is a command
on the PATH.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from streamnb.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.M | re.S)
PYTHON_BLOCKS = [code for lang, code in BLOCKS if lang == "python"]
SHELL_BLOCKS = [code for lang, code in BLOCKS if lang in ("sh", "bash", "shell")]
SHELL_OPERATORS = {"<", ">", ">>", "|", "||", "&&", ";", "&"}


def test_the_readme_has_code_blocks_of_each_kind_and_no_other():
    assert PYTHON_BLOCKS and SHELL_BLOCKS
    assert sorted({lang for lang, _ in BLOCKS}) == ["python", "sh"]


def child_env() -> dict[str, str]:
    """The checkout's package first, whatever the folder the child runs in."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def printed(code: str) -> list[str]:
    """What the block says it prints: the comment of each ``print(...)  # text`` line."""
    return [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+# (.*)$", code, flags=re.M)]


@pytest.mark.parametrize("code", PYTHON_BLOCKS, ids=[f"python-{i}" for i in range(len(PYTHON_BLOCKS))])
def test_a_python_block_runs_and_prints_what_it_says(code, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=child_env(),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = printed(code)
    if expected:
        assert done.stdout.splitlines() == expected


def commands(block: str) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, comments dropped, each cut at
    its first redirection or pipe, ``a; b`` split in two."""
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, ";"]:
            if word in SHELL_OPERATORS or word.endswith(";"):
                if word.endswith(";") and word != ";":
                    command.append(word[:-1])
                if command:
                    found.append(command)
                command = []
                if word not in (";", "&&", "||") and not word.endswith(";"):  # the rest is a redirection
                    break
            else:
                command.append(word)
    return found


COMMANDS = [command for block in SHELL_BLOCKS for command in commands(block)]


def test_the_shell_blocks_hold_the_commands_the_readme_promises():
    firsts = {(c[0], c[1] if len(c) > 1 else "") for c in COMMANDS}
    assert {("make", "demo"), ("make", "test"), ("pip", "install"), ("streamnb", "run"),
            ("streamnb", "mail")} <= firsts  # fmt: skip


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The ``streamnb`` subcommand that ``words`` (after ``streamnb``) name, and its path."""
    command: click.Command = cli
    path: list[str] = []
    for word in words:
        sub = command.get_command(click.Context(command), word) if isinstance(command, click.Group) else None
        if sub is None:  # (get_command, not .commands: a group may load a command when named)
            break
        command = sub
        path.append(word)
    return command, path


def check_streamnb(words: list[str]) -> None:
    command, path = resolve(words)
    assert path, f"no streamnb subcommand in {words}"
    if not command.context_settings.get("ignore_unknown_options"):
        known = {"--help", "-h"}
        for param in command.params:
            known.update(param.opts)
            known.update(param.secondary_opts)
        for word in words[len(path):]:
            if word.startswith("-"):
                assert word.split("=")[0] in known, f"streamnb {' '.join(path)} has no option {word}"
    script = Path(sys.executable).parent / "streamnb"
    assert script.exists(), f"the console script {script} is not installed (pip install -e .)"
    done = subprocess.run([str(script), *path, "--help"], env=child_env(), capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0 and "Usage:" in done.stdout, done.stderr


def check_make(words: list[str]) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in words:
        assert re.search(rf"^{re.escape(target)}:", makefile, flags=re.M), f"no make target {target}"


def check_pip(words: list[str]) -> None:
    assert words[0] == "install"
    table = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project.optional-dependencies]")[1]
    extras = set(re.findall(r"^([\w-]+) = \[", table.split("\n[")[0], flags=re.M))
    assert {"kafka", "mail", "demo", "dev"} <= extras  # the table was read
    for spec in words[1:]:
        match = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", spec)
        assert match, f"pip install {spec}: the README installs from the clone"
        assert set(filter(None, (match.group(1) or "").split(","))) <= extras, spec


def check_python(words: list[str]) -> None:
    assert words[0] == "-m" and importlib.util.find_spec(words[1]), words
    for word in words[2:]:
        if "/" in word and not word.startswith("-"):
            assert (ROOT / word).exists(), f"{word} is not in the repository"


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c)[:60] for c in COMMANDS])
def test_a_shell_command_names_what_exists(command):
    first, rest = command[0], command[1:]
    if first == "streamnb":
        check_streamnb(rest)
    elif first == "make":
        check_make(rest)
    elif first == "pip":
        check_pip(rest)
    elif Path(first).name == "python":
        check_python(rest)
    else:
        assert shutil.which(first), f"{first}: no such command"
