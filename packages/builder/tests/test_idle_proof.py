"""The builder's idle proof: a tick proven idle without Flyte, and every change that must
make the next tick a full one.

Each scenario runs a real full tick in process (githubkit over HTTP to the served
emulator, the real selection, the real memory under `tmp_path`), which leaves its
`IdleProof` as the scheduled task does (`leave_idle_proof`); then `fast_idle_tick`, the
lean path of `agent-loop run builder`, re-checks it with plain conditional requests.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_loop_builder import run_builder_tick
from agent_loop_common.claims import (
    BackoffMarker,
    DibsMarker,
    new_run_id,
    render_backoff,
    render_dibs,
)
from agent_loop_common.memory import IDLE_PATH, IdleCount, LocalKey
from agent_loop_common.records import Role, RunRecord, TargetKind
from agent_loop_common.runtime import (
    IdleProof,
    fast_idle_tick,
    leave_idle_proof,
    local_raw_data_path,
    open_runtime,
)
from agent_loop_common.settings import Settings
from agent_loop_testing import GitHubEmulator, emulator_settings

NOTE = "no eligible issue"
STRANGER = "stranger"


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Generator[tuple[GitHubEmulator, Settings]]:
    """A repository the builder must leave alone: #1 waits for #2, and #2 was opened by
    someone with read permission only. The model's key is set (never used)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    emulator.add_user(STRANGER, permission="read")
    emulator.add_issue("Use the new parser", "Depends on #2.")
    emulator.add_issue("Rewrite everything", "Please.", author=STRANGER)
    with emulator.serve() as url:
        yield emulator, emulator_settings(emulator, tmp_path, github_api_url=url)


async def full_tick(settings: Settings) -> tuple[RunRecord | None, IdleProof | None]:
    """One full untargeted builder tick, leaving its proof as the scheduled task does."""
    async with open_runtime(
        settings, Role.BUILDER, memory_root=str(local_raw_data_path(settings))
    ) as runtime:
        record = await run_builder_tick(runtime)
        proof = await leave_idle_proof(runtime, record, note=NOTE)
    return record, proof


def proven(settings: Settings, *, now: datetime | None = None) -> bool:
    """Whether the next tick is proven idle by the lean path."""
    return fast_idle_tick(settings, Role.BUILDER, now=now) is not None


def idle_counter(settings: Settings) -> LocalKey:
    """Today's idle-run counter of the builder, in the local memory the ticks use."""
    day = datetime.now(UTC).date()
    return LocalKey.at(
        local_raw_data_path(settings),
        org=settings.flyte_org,
        project=settings.flyte_project,
        domain=settings.flyte_domain,
        key=f"agent-loop-idle-builder-{day:%Y%m%d}",
    )


async def test_an_unchanged_repository_is_proven_idle_with_free_requests(
    served: tuple[GitHubEmulator, Settings],
) -> None:
    emulator, settings = served
    assert not proven(settings)  # no stored state: the first tick is the full one
    record, proof = await full_tick(settings)
    assert record is None
    assert proof is not None
    assert [r.url.split("/", 3)[3].split("?")[0] for r in proof.reads] == [
        "user",
        "repos/acme/widgets/issues",
        "repos/acme/widgets/pulls",
        f"repos/acme/widgets/collaborators/{STRANGER}/permission",
    ]
    used = emulator.rate_limit_remaining(emulator.bot)
    summary = fast_idle_tick(settings, Role.BUILDER)
    assert summary is not None
    assert (summary.role, summary.outcome, summary.note) == (Role.BUILDER, "idle", NOTE)
    assert emulator.rate_limit_remaining(emulator.bot) == used  # 304s are not billed
    assert proven(settings)
    counted = IdleCount.model_validate_json(idle_counter(settings).read_text(IDLE_PATH) or "")
    assert counted.count == 3  # the full tick, then two proven ones


CHANGES: dict[str, tuple[Callable[[GitHubEmulator], object], bool]] = {
    # what happens between two ticks, and whether the builder still has nothing to do
    "an issue opened": (lambda e: e.add_issue("More", "Add a colour.", author=STRANGER), True),
    "an issue edited": (lambda e: e.edit_issue(1, body="Ready now.", by=e.owner), False),
    "an issue labelled": (lambda e: e.label_issue(1, "bug", actor=e.owner), True),
    "an issue commented": (lambda e: e.add_comment(2, "Agreed.", author=e.owner), True),
    "an issue closed": (lambda e: e.close_issue(2, by=e.owner), False),
    "a pull request opened": (
        lambda e: (
            e.push("feature", {"a.py": "x = 1\n"}, author=e.owner, message="a"),
            e.open_pull("feature", title="Feature", body="Fixes #1"),
        ),
        True,
    ),
    "the author's permission raised": (lambda e: e.set_permission(STRANGER, "write"), False),
}


@pytest.mark.parametrize("change", list(CHANGES))
async def test_a_change_on_github_makes_the_next_tick_a_full_one(
    served: tuple[GitHubEmulator, Settings], change: str
) -> None:
    emulator, settings = served
    await full_tick(settings)
    assert proven(settings)
    make, still_idle = CHANGES[change]
    make(emulator)
    assert not proven(settings)
    if still_idle:  # the full tick takes the decision again and proves the new state
        record, proof = await full_tick(settings)
        assert record is None
        assert proof is not None
        assert proven(settings)


async def test_a_changed_setting_makes_the_next_tick_a_full_one(
    served: tuple[GitHubEmulator, Settings],
) -> None:
    _, settings = served
    await full_tick(settings)
    assert proven(settings)
    assert not proven(settings.model_copy(update={"trusted_label": "agent-ok"}))
    assert not proven(settings.model_copy(update={"branch_prefix": "bots/"}))


async def test_a_model_the_tick_could_not_call_leaves_it_to_the_full_path(
    served: tuple[GitHubEmulator, Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, settings = served
    await full_tick(settings)
    assert proven(settings)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert not proven(settings)  # the full path stops with the key's name (exit 2)


async def test_the_proof_runs_out_and_a_targeted_tick_voids_it(
    served: tuple[GitHubEmulator, Settings],
) -> None:
    _, settings = served
    _, proof = await full_tick(settings)
    assert proof is not None
    assert proven(settings, now=proof.recheck_at - timedelta(seconds=1))
    assert not proven(settings, now=proof.recheck_at)
    async with open_runtime(
        settings, Role.BUILDER, memory_root=str(local_raw_data_path(settings))
    ) as runtime:
        record = await run_builder_tick(runtime, 2)
        assert await leave_idle_proof(runtime, record, note=NOTE, untargeted=False) is None
    assert not proven(settings)


@pytest.mark.parametrize("marker", ["claim", "backoff"])
async def test_a_claim_or_back_off_bounds_the_proof_by_its_end(
    served: tuple[GitHubEmulator, Settings], marker: str
) -> None:
    emulator, settings = served
    emulator.set_permission(STRANGER, "write")  # #2 is eligible, but held by the clock
    until = (datetime.now(UTC) + timedelta(minutes=10)).replace(microsecond=0)
    run = new_run_id()
    held = (
        render_dibs(DibsMarker("claim", TargetKind.ISSUE, "agent-loop", "builder", run, until))
        if marker == "claim"
        else render_backoff(BackoffMarker(attempts=1, until=until, run=run))
    )
    emulator.add_comment(2, f"Held.\n{held}", author=emulator.bot)
    record, proof = await full_tick(settings)
    assert record is None
    assert proof is not None
    assert proof.recheck_at == until  # not the hour a proof lasts otherwise
    assert proven(settings, now=until - timedelta(seconds=1))
    assert not proven(settings, now=until)  # the clock alone lifts it: decide again


async def test_a_local_file_it_cannot_read_or_write_leaves_it_to_the_full_path(
    served: tuple[GitHubEmulator, Settings],
) -> None:
    _, settings = served
    await full_tick(settings)
    assert proven(settings)
    counter = idle_counter(settings).folder / IDLE_PATH
    counter.unlink()
    counter.mkdir()  # neither readable nor replaceable as a file
    assert not proven(settings)
