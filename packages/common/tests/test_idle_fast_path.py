"""The pieces of the idle tick's lean path: the local memory without Flyte, the proof's
stored form, and the conditional re-check of GitHub reads."""

from __future__ import annotations

import http.client
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agent_loop_common.memory import (
    LocalKey,
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.runtime import IdleProof, ProvenRead
from agent_loop_common.runtime._fast_idle import unchanged
from agent_loop_testing import GitHubEmulator

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _location(root: Path) -> MemoryLocation:
    return MemoryLocation(org="local", project="agent-loop", domain="development", root=str(root))


def _key(root: Path, key: str) -> LocalKey:
    return LocalKey.at(root, org="local", project="agent-loop", domain="development", key=key)


async def test_flyte_memory_store_reads_what_local_key_wrote(tmp_path: Path) -> None:
    _key(tmp_path, "agent-loop-idle-builder-20261203").write_text(
        "idle/count.json", '{"count": 3}', actor="builder"
    )
    store = await open_store(_location(tmp_path), "agent-loop-idle-builder-20261203")
    assert await store.read_text.aio("idle/count.json") == '{"count": 3}'
    meta = await store.get_meta.aio("idle/count.json")
    assert meta is not None
    assert (meta.updated_by, meta.bytes) == ("builder", 12)
    assert meta.sha256 == await store.current_sha.aio("idle/count.json")


async def test_local_key_reads_what_flyte_memory_store_saved(tmp_path: Path) -> None:
    location = _location(tmp_path)
    store = append_store(location, "agent-loop-etags-builder")
    written = await store.write_text.aio("etags/cache.json", '{"format":1}', actor="builder")
    await save_store(location, store)
    key = _key(tmp_path, "agent-loop-etags-builder")
    assert key.read_text("etags/cache.json") == '{"format":1}'
    assert key.sha256("etags/cache.json") == written.sha256
    assert key.read_text("etags/missing.json") is None
    assert key.sha256("etags/missing.json") == ""


def test_local_key_refuses_paths_outside_its_entries(tmp_path: Path) -> None:
    key = _key(tmp_path, "agent-loop-etags-builder")
    for bad in ("../other/x.json", "/etc/passwd", "meta/x.json", "messages.json"):
        with pytest.raises(ValueError, match="not an entry path"):
            key.write_text(bad, "x", actor="builder")
    with pytest.raises(ValueError, match="one path segment"):
        LocalKey.at(tmp_path, org="local", project="..", domain="development", key="k")


def _proof(**changes: object) -> IdleProof:
    fields: dict[str, object] = {
        "role": "builder",
        "repo": "acme/widgets",
        "settings": "abc",
        "reads": (ProvenRead("https://api.github.com/user", 'W/"1"', (("accept", "x"),)),),
        "decided_at": T0,
        "recheck_at": T0 + timedelta(hours=1),
        "note": "no eligible issue",
    }
    fields.update(changes)
    return IdleProof(**fields)  # type: ignore[arg-type]


def test_a_proof_round_trips_and_anything_else_reads_as_none() -> None:
    proof = _proof()
    assert IdleProof.from_json(proof.to_json()) == proof
    assert proof.holds_at(T0)
    assert not proof.holds_at(T0 + timedelta(hours=1))
    assert not proof.holds_at(T0 - timedelta(seconds=1))  # a clock set back: decide again
    for stored in (None, "", "{}", "[]", "not json", '{"format": 2}', proof.to_json()[:-5]):
        assert IdleProof.from_json(stored) is None
    assert IdleProof.from_json(_proof(reads=()).to_json()) is None  # proves nothing
    naive = proof.to_json().replace("+00:00", "")
    assert IdleProof.from_json(naive) is None


def test_the_re_check_answers_only_what_every_read_shows() -> None:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    with emulator.serve() as url:
        where = urlsplit(url)
        connection = http.client.HTTPConnection(where.netloc)
        headers = {"Authorization": f"Bearer {emulator.bot_token}", "Accept": "application/json"}
        connection.request("GET", "/repos/acme/widgets/issues", headers=headers)
        response = connection.getresponse()
        response.read()
        etag = response.getheader("etag") or ""
        connection.close()
        read = ProvenRead(
            f"{url}/repos/acme/widgets/issues", etag, (("accept", "application/json"),)
        )

        def recheck(read: ProvenRead, base_url: str = url) -> bool:
            return unchanged([read], base_url=base_url, token=emulator.bot_token, timeout=5.0)

        assert recheck(read)
        emulator.add_issue("New", "work")
        assert not recheck(read)
        before = len(emulator.requests)
        assert not recheck(ProvenRead("http://127.0.0.1:9/steal", etag))
        assert not recheck(ProvenRead(f"{url}/user", etag), base_url=f"{url}/api/v3")
        assert len(emulator.requests) == before  # the token never left for elsewhere
