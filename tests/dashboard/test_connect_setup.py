"""The one-line setup per client: `GET /connect/<client>?room=…` serves a sh script that,
run in a checkout, writes the client's MCP configuration and hooks, which are checked
against each client's documented schema (tests/fixtures/clients/<client>/); and the
Connect page leads with these commands."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tomllib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; it comes with drf-spectacular
import pytest
from django.conf import settings
from django.test import Client

from dashboard import client_setup
from dashboard.views.connect import claude_http_hooks
from tenants import services
from tests.conftest import new_room_id
from tests.dashboard.conftest import Person

pytestmark = pytest.mark.store

KEY = "rs_live_setupTestKey0123456789abcdef"
FIXTURES = settings.BASE_DIR / "tests" / "fixtures" / "clients"
MCP_URL = "http://testserver/mcp?tools=core"
CLIENTS = client_setup.CLIENTS


@dataclass
class Checkout:
    repo: Path
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "ROOMSERVICE_KEY": KEY,
            "GIT_CONFIG_NOSYSTEM": "1",
            **extra,
        }

    def files(self) -> dict[str, str]:
        """Every file of the checkout (its .git/config and hooks too) and of HOME, by digest."""
        found: dict[str, str] = {}
        for root in (self.repo, self.home):
            for path in root.rglob("*"):
                if path.is_file() and "objects" not in path.parts:
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        return found

    def texts(self) -> Iterator[tuple[Path, bytes]]:
        for root in (self.repo, self.home):
            for path in root.rglob("*"):
                if path.is_file():
                    yield path, path.read_bytes()


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return Checkout(repo=repo, home=home)


def served(client: Client, name: str, room: str = "my-room", agent: str = "backend") -> str:
    answer = client.get(f"/connect/{name}", {"room": room, "agent": agent})
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "text/plain; charset=utf-8"
    return answer.content.decode()


def run(
    script: str, checkout: Checkout, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh"],
        input=script,
        cwd=checkout.repo,
        env=env or checkout.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def schema_valid(client_name: str, schema: str, document: Any) -> None:
    loaded = json.loads((FIXTURES / client_name / schema).read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    jsonschema.Draft202012Validator(loaded).validate(document)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def codex_config(checkout: Checkout) -> Path:
    return checkout.home / ".codex" / "config.toml"


# The file each client's MCP server entry lands in, and how to read the entries.
def mcp_servers(name: str, checkout: Checkout) -> dict[str, Any]:
    if name == "claude-code":
        return dict(read_json(checkout.repo / ".mcp.json")["mcpServers"])
    if name == "cursor":
        return dict(read_json(checkout.repo / ".cursor" / "mcp.json")["mcpServers"])
    if name == "vscode":
        return dict(read_json(checkout.repo / ".vscode" / "mcp.json")["servers"])
    return dict(tomllib.loads(codex_config(checkout).read_text())["mcp_servers"])


def assert_no_key(checkout: Checkout, result: subprocess.CompletedProcess[str]) -> None:
    assert KEY not in result.stdout and KEY not in result.stderr
    for path, content in checkout.texts():
        assert KEY.encode() not in content, path


@pytest.mark.parametrize("name", CLIENTS)
def test_the_served_script_writes_the_clients_documented_configuration_without_the_key(
    name: str, checkout: Checkout
) -> None:
    result = run(served(Client(), name), checkout)

    assert result.returncode == 0, result.stderr
    assert_no_key(checkout, result)
    repo = checkout.repo
    roomservice = mcp_servers(name, checkout)["roomservice"]
    if name == "claude-code":
        schema_valid(name, "mcp.schema.json", read_json(repo / ".mcp.json"))
        assert roomservice == {
            "type": "http",
            "url": MCP_URL,
            "headers": {"Authorization": "Bearer ${ROOMSERVICE_KEY}"},
        }
        local = read_json(repo / ".claude" / "settings.local.json")
        schema_valid(name, "settings-hooks.schema.json", local)
        hook_url = "http://testserver/api/v1/rooms/my-room/hooks/claude-code"
        # The agent's name written in, the key named; paths from the checkout's top.
        root = urllib.parse.quote(str(repo.resolve()), safe="/")
        assert local == json.loads(claude_http_hooks(hook_url, "backend", root))
        headers = local["hooks"]["PreToolUse"][0]["hooks"][0]["headers"]
        assert headers["X-Roomservice-Agent"] == "backend"
        assert headers["Authorization"] == "Bearer $ROOMSERVICE_KEY"
        start = local["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        assert "-H 'X-Roomservice-Agent: backend'" in start
        assert not (repo / ".claude" / "settings.json").exists()  # the shared file: untouched
        assert not (repo / "hooks").exists()  # over HTTP: nothing to install
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", ".claude/settings.local.json"], cwd=repo
        )
        assert ignored.returncode == 0  # this checkout's own, never committed
    elif name == "codex":
        config = tomllib.loads(codex_config(checkout).read_text())
        schema_valid(name, "config.schema.json", config)
        assert roomservice == {"url": MCP_URL, "bearer_token_env_var": "ROOMSERVICE_KEY"}
        hooks = read_json(checkout.home / ".codex" / "hooks.json")  # the person's own
        schema_valid(name, "hooks.schema.json", hooks)
        assert hooks == client_setup.CODEX_HOOKS
        assert not (repo / ".codex").exists()
    elif name == "cursor":
        schema_valid(name, "mcp.schema.json", read_json(repo / ".cursor" / "mcp.json"))
        assert roomservice == {
            "url": MCP_URL,
            "headers": {"Authorization": "Bearer ${env:ROOMSERVICE_KEY}"},
        }
        hooks = read_json(repo / ".cursor" / "hooks.json")
        schema_valid(name, "hooks.schema.json", hooks)
        assert hooks == client_setup.CURSOR_HOOKS
    else:
        schema_valid(name, "mcp.schema.json", read_json(repo / ".vscode" / "mcp.json"))
        assert roomservice == {
            "type": "http",
            "url": MCP_URL,
            "headers": {"Authorization": "Bearer ${env:ROOMSERVICE_KEY}"},
        }
    if name != "claude-code":  # the guard script and the pre-commit hook
        guard = (settings.BASE_DIR / "hooks" / "roomservice-guard").read_bytes()
        assert (repo / "hooks" / "roomservice-guard").read_bytes() == guard
        assert (repo / ".git" / "hooks" / "pre-commit").read_bytes() == guard
    # Every client: the settings in this worktree's own git config, and no roomservice.key.
    assert sorted(git_config(checkout, "--worktree")) == [
        "roomservice.agent backend",
        "roomservice.room my-room",
        "roomservice.url http://testserver",
        f"roomservice.worktree {repo.resolve()}",
    ]
    assert git_config(checkout, "--local") == []


def git_config(checkout: Checkout, scope: str, repo: Path | None = None) -> list[str]:
    found = subprocess.run(
        ["git", "config", scope, "--get-regexp", "^roomservice\\."],
        cwd=repo or checkout.repo,
        env=checkout.env(),
        capture_output=True,
        text=True,
    )
    return found.stdout.splitlines()


# An entry of someone else's already in each client's file, to be kept.
def existing(name: str, checkout: Checkout) -> None:
    other = {"url": "https://other.example.com/mcp"}
    if name == "claude-code":
        (checkout.repo / ".mcp.json").write_text(
            json.dumps({"mcpServers": {"other": {"type": "http", **other}}})
        )
        (checkout.repo / ".claude").mkdir()
        (checkout.repo / ".claude" / "settings.local.json").write_text(
            json.dumps(
                {
                    "permissions": {"allow": ["Bash(make test)"]},
                    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
                }
            )
        )
    elif name == "codex":
        codex_config(checkout).parent.mkdir()
        codex_config(checkout).write_text(
            '# mine\nmodel = "gpt-5"\n\n[mcp_servers.other]\nurl = "https://other.example.com/mcp"'
        )
    elif name == "cursor":
        (checkout.repo / ".cursor").mkdir()
        (checkout.repo / ".cursor" / "mcp.json").write_text(
            json.dumps({"mcpServers": {"other": other}})
        )
    else:
        (checkout.repo / ".vscode").mkdir()
        (checkout.repo / ".vscode" / "mcp.json").write_text(
            json.dumps({"servers": {"other": {"type": "http", **other}}, "inputs": []})
        )


@pytest.mark.parametrize("name", CLIENTS)
def test_a_second_run_changes_nothing_and_an_unrelated_server_entry_is_kept(
    name: str, checkout: Checkout
) -> None:
    existing(name, checkout)
    script = served(Client(), name)

    first = run(script, checkout)
    assert first.returncode == 0, first.stderr
    written = checkout.files()
    second = run(script, checkout)

    assert second.returncode == 0, second.stderr
    assert checkout.files() == written
    assert "written" not in second.stdout and "merged" not in second.stdout
    servers = mcp_servers(name, checkout)
    assert set(servers) == {"other", "roomservice"}
    assert servers["other"]["url"] == "https://other.example.com/mcp"
    if name == "claude-code":
        settings_json = read_json(checkout.repo / ".claude" / "settings.local.json")
        assert settings_json["permissions"] == {"allow": ["Bash(make test)"]}
        assert settings_json["hooks"]["Stop"][0] == {
            "hooks": [{"type": "command", "command": "true"}]
        }
        assert len(settings_json["hooks"]["Stop"]) == 2
    if name == "codex":
        text = codex_config(checkout).read_text()
        assert text.startswith('# mine\nmodel = "gpt-5"\n')
        schema_valid(name, "config.schema.json", tomllib.loads(text))


def test_a_file_that_holds_the_key_in_clear_is_not_rewritten(checkout: Checkout) -> None:
    cursor = checkout.repo / ".cursor"
    cursor.mkdir()
    before = json.dumps(
        {"mcpServers": {"mine": {"url": "https://x.example.com", "headers": {"K": KEY}}}}
    )
    (cursor / "mcp.json").write_text(before)

    result = run(served(Client(), "cursor"), checkout)

    assert result.returncode != 0
    assert "would hold the key itself" in result.stderr
    assert (cursor / "mcp.json").read_text() == before
    assert KEY not in result.stdout + result.stderr


def test_our_own_entry_with_the_key_inline_is_replaced_by_the_variable(checkout: Checkout) -> None:
    (checkout.repo / ".vscode").mkdir()
    old = {"type": "http", "url": MCP_URL, "headers": {"Authorization": f"Bearer {KEY}"}}
    (checkout.repo / ".vscode" / "mcp.json").write_text(
        json.dumps({"servers": {"roomservice": old}})
    )

    result = run(served(Client(), "vscode"), checkout)

    assert result.returncode == 0, result.stderr
    assert_no_key(checkout, result)
    assert mcp_servers("vscode", checkout)["roomservice"]["headers"] == {
        "Authorization": "Bearer ${env:ROOMSERVICE_KEY}"
    }


def test_a_file_it_cannot_merge_safely_is_refused_with_what_to_add(checkout: Checkout) -> None:
    (checkout.repo / ".vscode").mkdir()
    commented = '{\n  // mine\n  "servers": {}\n}\n'
    (checkout.repo / ".vscode" / "mcp.json").write_text(commented)

    result = run(served(Client(), "vscode"), checkout)

    assert result.returncode != 0
    assert "not plain JSON" in result.stderr and "Add this to it by hand" in result.stderr
    assert '"Bearer ${env:ROOMSERVICE_KEY}"' in result.stderr  # what to add
    assert (checkout.repo / ".vscode" / "mcp.json").read_text() == commented


def test_another_codex_roomservice_table_is_refused_not_rewritten(checkout: Checkout) -> None:
    codex_config(checkout).parent.mkdir()
    mine = '[mcp_servers.roomservice]\nurl = "https://old.example.com/mcp"\n'
    codex_config(checkout).write_text(mine)

    result = run(served(Client(), "codex"), checkout)

    assert result.returncode != 0
    assert "replace that table with this one" in result.stderr
    assert codex_config(checkout).read_text() == mine


def test_without_python3_a_new_file_is_written_and_an_existing_one_refused(
    checkout: Checkout, tmp_path: Path
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in (
        *("sh", "git", "cmp", "grep", "mkdir", "dirname", "cat", "rm", "mv", "chmod", "cp"),
        *("sed", "head", "tr", "readlink"),
    ):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    env = checkout.env(PATH=str(tools))
    script = served(Client(), "cursor")

    first = run(script, checkout, env)

    assert first.returncode == 0, first.stderr
    schema_valid("cursor", "mcp.schema.json", read_json(checkout.repo / ".cursor" / "mcp.json"))
    again = run(script, checkout, env)
    assert again.returncode != 0
    assert "python3 is not here to merge into it safely" in again.stderr
    assert_no_key(checkout, again)


def test_an_agent_name_is_data_to_the_shell_never_code(checkout: Checkout) -> None:
    agent = "a$(touch pwned)`touch pwned2`'\"; touch pwned3"

    result = run(served(Client(), "codex", agent=agent), checkout)

    assert result.returncode == 0, result.stderr
    assert not list(checkout.repo.glob("pwned*"))
    stored = subprocess.run(
        ["git", "config", "roomservice.agent"],
        cwd=checkout.repo,
        env=checkout.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert stored == agent + "\n"


def test_claude_codes_agent_name_is_data_in_its_hooks_never_code(checkout: Checkout) -> None:
    agent = "a$(touch pwned)`touch pwned2`'\"; touch pwned3"

    result = run(served(Client(), "claude-code", agent=agent), checkout)

    assert result.returncode == 0, result.stderr
    local = read_json(checkout.repo / ".claude" / "settings.local.json")
    assert local["hooks"]["Stop"][0]["hooks"][0]["headers"]["X-Roomservice-Agent"] == agent
    command = local["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    hook = subprocess.run(  # as Claude Code runs it (the server is not there: curl fails)
        ["sh", "-c", command.replace("http://testserver", "http://127.0.0.1:9")],
        cwd=checkout.repo,
        env=checkout.env(),
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert hook.returncode == 0
    assert not list(checkout.repo.glob("pwned*"))


@pytest.mark.parametrize(
    ("room", "agent", "tools"),
    [
        ("", "backend", "core"),
        ("A-Room", "backend", "core"),
        ("x", "backend", "core"),
        ("my__room", "backend", "core"),
        ("../etc", "backend", "core"),
        ("my room", "backend", "core"),
        ("r" * 65, "backend", "core"),
        ("my-room", "person:ann@example.com", "core"),
        ("my-room", "zero\u200bwidth", "core"),
        ("my-room", " backend", "core"),
        ("my-room", "line\nbreak", "core"),
        ("my-room", "\ufb01le", "core"),  # not NFKC
        ("my-room", "a" * 129, "core"),
        ("my-room", "<AGENT_NAME>", "core"),
        ("my-room", "backend", "everything"),
    ],
)
def test_odd_room_ids_agents_and_profiles_answer_a_script_that_says_why_and_fails(
    room: str, agent: str, tools: str, checkout: Checkout
) -> None:
    answer = Client().get("/connect/cursor", {"room": room, "agent": agent, "tools": tools})

    # A 200, so that `curl -f` hands it to sh; two lines a browser shows readably.
    assert answer.status_code == 200
    assert answer["Content-Type"] == "text/plain; charset=utf-8"
    text = answer.content.decode()
    assert text.startswith("printf '%s\\n' 'roomservice-setup: ") and text.endswith("exit 1\n")
    assert len(text.splitlines()) == 2
    result = run(text, checkout)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("roomservice-setup: ") and result.stderr.count("\n") == 1
    assert not (checkout.repo / ".cursor").exists()


def test_claude_codes_agent_name_must_fit_an_http_header(checkout: Checkout) -> None:
    answer = Client().get("/connect/claude-code", {"room": "my-room", "agent": "bäckend"})
    result = run(answer.content.decode(), checkout)
    assert result.returncode == 1
    assert result.stderr == f"roomservice-setup: {client_setup.SETUP_AGENT_HEADER}\n"
    # The other clients keep it in git config, which takes any name.
    assert run(served(Client(), "codex", agent="bäckend"), checkout).returncode == 0


def test_the_answer_is_the_same_for_a_room_that_exists_and_one_that_does_not(
    ann: Person, bob: Person
) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("setup"), actor="test")
    missing = new_room_id("setup")
    for name in CLIENTS:
        for who in (Client(), ann.client, bob.client):
            found = who.get(f"/connect/{name}", {"room": room.room_id, "agent": "backend"})
            absent = who.get(f"/connect/{name}", {"room": missing, "agent": "backend"})
            assert found.status_code == absent.status_code == 200
            assert found.content.decode().replace(room.room_id, "ROOM") == (
                absent.content.decode().replace(missing, "ROOM")
            )


def test_the_script_asks_for_the_key_without_printing_one(checkout: Checkout) -> None:
    env = checkout.env()
    del env["ROOMSERVICE_KEY"]

    result = run(served(Client(), "claude-code"), checkout, env)

    assert result.returncode == 0, result.stderr
    assert "ROOMSERVICE_KEY is not set in this shell" in result.stdout


def test_the_connect_page_leads_with_one_command_per_client_and_folds_the_snippets(
    ann: Person,
) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("setup"), actor="test")
    page = ann.client.post(f"/rooms/{room.room_id}/connect", follow=True).content.decode()
    secret = re.search(r"rs_live_[A-Za-z0-9_-]+", page).group(0)  # type: ignore[union-attr]

    fold = page.index('<details id="snippets">')
    commands = {}
    for name in CLIENTS:
        found = re.search(rf'<pre id="s-setup-{name}">(.*?)</pre>', page, re.S)
        assert found and found.start() < fold, name
        commands[name] = html.unescape(found.group(1))
    assert commands == {
        name: (
            f"curl -fsS 'http://testserver/connect/{name}?room={room.room_id}"
            "&agent=<AGENT_NAME>' | sh"
        )
        for name in CLIENTS
    }
    for snippet in ("s-claude", "s-cursor", "s-codex", "s-vscode", "s-hook-claude-http"):
        assert page.index(f'<pre id="{snippet}">') > fold, snippet
    assert page.index("</details>") > page.index('<pre id="s-hook-codex">')
    one_liners = {
        name: html.unescape(m.group(1))
        for name, m in (
            (name, re.search(rf'<code id="s-mcp-{name}">(.*?)</code>', page, re.S))
            for name in CLIENTS
        )
        if m
    }
    assert one_liners["claude-code"] == (
        "claude mcp add --transport http --scope project roomservice "
        f"'{MCP_URL}' --header 'Authorization: Bearer ${{ROOMSERVICE_KEY}}'"
    )
    assert one_liners["codex"] == (
        f"codex mcp add roomservice --url '{MCP_URL}' --bearer-token-env-var ROOMSERVICE_KEY"
    )
    assert '"Bearer ${env:ROOMSERVICE_KEY}"' in one_liners["vscode"]
    assert all(secret not in text for text in [*commands.values(), *one_liners.values()])


def test_the_cursor_and_vscode_snippets_name_the_variable_not_the_key(ann: Person) -> None:
    room = services.room_create(team=ann.team, room_id=new_room_id("setup"), actor="test")
    page = ann.client.post(f"/rooms/{room.room_id}/connect", follow=True).content.decode()
    secret = re.search(r"rs_live_[A-Za-z0-9_-]+", page).group(0)  # type: ignore[union-attr]
    invited = ann.client.post(
        f"/rooms/{room.room_id}/invites", {"label": "guest", "expires_in": "3600"}, follow=True
    ).content.decode()
    invite = re.search(r"rs_inv_[A-Za-z0-9_-]+", invited).group(0)  # type: ignore[union-attr]

    for shown, key, prefix in ((page, secret, "s"), (invited, invite, "g")):
        for name, schema in (("cursor", "mcp.schema.json"), ("vscode", "mcp.schema.json")):
            found = re.search(rf'<pre id="{prefix}-{name}">(.*?)</pre>', shown, re.S)
            assert found, (prefix, name)
            text = html.unescape(found.group(1))
            assert key not in text and "${env:ROOMSERVICE_KEY}" in text
            schema_valid(name, schema, json.loads(text))
        assert f"export ROOMSERVICE_KEY={key}" in html.unescape(shown)


# --- P1: a hostile repository's symbolic links ---------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files of the person's own, outside the checkout, that a hostile repository links to."""
    folder = tmp_path / "outside"
    (folder / "dir").mkdir(parents=True)
    (folder / "bashrc").write_text("alias ls='ls --color'\n")
    (folder / "credentials").write_text(json.dumps({"token": "s3cret-cloud-token-0123"}))
    return folder


def outside_state(outside: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in outside.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("client", "link", "target"),
    [
        ("claude-code", ".mcp.json", "bashrc"),  # overwrite a shell start-up file
        ("claude-code", ".claude", "dir"),  # settings written into an outside folder
        ("claude-code", ".mcp.json", "credentials"),  # an outside secret copied in
        ("cursor", ".cursor", "dir"),
        ("codex", "hooks", "dir"),  # the guard script written outside
        ("codex", ".codex", "dir"),
        ("vscode", ".vscode/mcp.json", "credentials"),
    ],
)
def test_a_repositorys_symbolic_links_are_never_followed(
    client: str, link: str, target: str, checkout: Checkout, outside: Path, tmp_path: Path
) -> None:
    """Written as the attacker: the repository commits a link, the victim runs the setup."""
    repo = checkout.repo
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(outside / target)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=checkout.env())
    before = outside_state(outside)
    script = served(Client(), client)

    result = run(script, checkout)

    assert result.returncode == 1
    assert f"{link} is a symbolic link" in result.stderr
    assert "nothing was written" in result.stderr
    assert outside_state(outside) == before  # nothing outside read into, or written
    assert (repo / link).is_symlink()  # the link itself is left as it was
    for path in (*repo.rglob("*"), *checkout.home.rglob("*")):  # no copy of the secret
        if path.is_file() and not path.is_symlink():
            assert b"s3cret-cloud-token" not in path.read_bytes(), path
    # The ordinary checkout beside it is set up by the same script.
    plain = tmp_path / "plain"
    subprocess.run(["git", "init", "-q", str(plain)], check=True)
    assert run(script, Checkout(repo=plain, home=checkout.home)).returncode == 0


def test_a_link_where_a_temporary_file_might_go_is_never_written_through(
    checkout: Checkout, outside: Path
) -> None:
    repo = checkout.repo
    for name in (".mcp.json.roomservice-setup.tmp", ".mcp.json.tmp", ".roomservice-setup.tmp"):
        (repo / name).symlink_to(outside / "bashrc")
    before = outside_state(outside)

    result = run(served(Client(), "claude-code"), checkout)

    assert result.returncode == 0, result.stderr
    assert outside_state(outside) == before
    assert read_json(repo / ".mcp.json")["mcpServers"]["roomservice"]["url"] == MCP_URL
    mask = os.umask(0)
    os.umask(mask)
    assert (repo / ".mcp.json").stat().st_mode & 0o777 == 0o666 & ~mask  # as any new file


def test_the_merger_refuses_a_link_by_itself(checkout: Checkout, outside: Path) -> None:
    """The python3 merger checks too, whoever calls it (a link in a folder on the way)."""
    repo = checkout.repo
    (repo / "conf").symlink_to(outside / "dir")
    merger = client_setup._MERGER
    env = checkout.env(
        RS_KIND="json", RS_FILE="conf/mcp.json", RS_FRAGMENT="{}", RS_REPLACE="", RS_OURS=""
    )

    done = subprocess.run(
        ["python3", "-c", merger], cwd=repo, env=env, capture_output=True, text=True
    )

    assert done.returncode == 1 and "conf is a symbolic link" in done.stderr
    assert not list((outside / "dir").iterdir())


def test_codexs_hooks_run_the_guard_only_in_a_checkout_set_up_for_it(
    checkout: Checkout, tmp_path: Path
) -> None:
    """Codex's hooks are the person's own (read in every checkout, worktrees included), so
    each command runs the checkout's guard only where the setup ran: a repository that
    merely commits a hooks/roomservice-guard of its own runs nothing."""
    assert run(served(Client(), "codex", agent="frontend"), checkout).returncode == 0
    [start] = client_setup.CODEX_HOOKS["hooks"]["SessionStart"][0]["hooks"]
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "cwd": "."})
    hostile = tmp_path / "hostile"
    (hostile / "hooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(hostile)], check=True)
    (hostile / "hooks" / "roomservice-guard").write_text(f"touch {tmp_path}/ran\n")
    for folder, runs in ((hostile, False), (checkout.repo / "sub", True)):
        folder.mkdir(exist_ok=True)
        done = subprocess.run(
            ["sh", "-c", start["command"]],
            input=payload,
            cwd=folder,
            env={**checkout.env(), "ROOMSERVICE_URL": "", "ROOMSERVICE_KEY": ""},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        assert ("Roomservice hooks" in done.stderr + done.stdout) is runs, done
    assert not (tmp_path / "ran").exists()
