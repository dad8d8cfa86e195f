"""Shell completion: `ratchet --install-completion` installs a script, and the program answers it."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from ..helpers.cli import PopulatedStore, ratchet_command, ratchet_env


def from_bash(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `ratchet ARGS...` as a child of bash, the shell Typer detects and completes for."""
    line = f"{shlex.join(ratchet_command(*args))}; exit $?"  # two commands: bash stays the parent
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=ratchet_env(**env), capture_output=True, text=True, timeout=60
    )


def complete(cwd: Path, words: str, **env: str) -> list[str]:
    """What the program offers for the last word of `words`, asked as bash's completion script asks."""
    typed = words.split()
    current = len(typed) - (0 if words.endswith(" ") else 1)
    done = subprocess.run(
        ratchet_command(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=ratchet_env(_RATCHET_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(current), **env),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_show_completion_prints_the_script_for_bash(tmp_path: Path) -> None:
    done = from_bash(tmp_path, "--show-completion")

    assert done.returncode == 0, done.stderr
    assert "_RATCHET_COMPLETE=complete_bash" in done.stdout
    assert "complete -o default -F _ratchet_completion ratchet" in done.stdout


def test_install_completion_installs_the_script_for_bash(tmp_path: Path) -> None:
    done = from_bash(tmp_path, "--install-completion", HOME=str(tmp_path))

    assert done.returncode == 0, done.stderr
    assert "bash completion installed" in done.stdout
    [script] = (tmp_path / ".bash_completions").iterdir()
    assert "_RATCHET_COMPLETE=complete_bash" in script.read_text()
    assert str(script.relative_to(tmp_path)) in (tmp_path / ".bashrc").read_text()


def test_commands_options_statuses_and_task_ids_complete(
    tmp_path: Path, populated_store: PopulatedStore
) -> None:
    store = {"RATCHET_STORE": populated_store.url}

    assert complete(tmp_path, "ratchet sh") == ["show"]
    assert complete(tmp_path, "ratchet tasks --sta") == ["--status"]
    assert complete(tmp_path, "ratchet tasks --status wa") == ["waiting"]
    assert complete(tmp_path, "ratchet show t-r", **store) == ["t-running"]
    assert sorted(complete(tmp_path, "ratchet resume ", **store)) == sorted(
        task.id for task in populated_store.tasks.all
    )


def test_a_task_id_completes_to_nothing_where_there_is_no_store(tmp_path: Path) -> None:
    assert complete(tmp_path, "ratchet show t-") == []  # the default store, ./ratchet.db: missing
    assert list(tmp_path.iterdir()) == []  # and completing did not create it


def test_task_ids_complete_from_the_store_ratchet_toml_names(
    tmp_path: Path, populated_store: PopulatedStore
) -> None:
    (tmp_path / "ratchet.toml").write_text(f'[store]\nurl = "{populated_store.url}"\n')

    assert complete(tmp_path, "ratchet show t-r") == ["t-running"]
    assert complete(tmp_path, "ratchet show t-r", RATCHET_STORE="sqlite:///./none.db") == []  # env wins
    assert not (tmp_path / "none.db").exists()
