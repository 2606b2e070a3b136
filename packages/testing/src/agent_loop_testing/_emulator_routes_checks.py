"""Check runs and commit statuses: what CI reports about a commit.

Tests usually set these with `GitHubEmulator.set_check_run` / `set_status`; the REST
routes exist so code under test can read them (and, for check runs, write them the way
GitHub allows: only with an App installation token).
"""

from __future__ import annotations

from typing import cast

from agent_loop_testing import _emulator_hooks as hooks
from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_http import Ctx, Reply, Route, paginate, string
from agent_loop_testing._emulator_ops_pulls import (
    combined_state,
    latest_statuses,
    set_check_run,
    set_status,
)
from agent_loop_testing._emulator_render import Json, repository_json
from agent_loop_testing._emulator_render_pulls import check_run_json, status_json
from agent_loop_testing._emulator_state import CheckRunRec, State

__all__ = ["ROUTES"]

_DOCS = "https://docs.github.com/rest"


def _commit(st: State, ref: str) -> str:
    sha = st.git.resolve(ref)
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {ref}")
    return sha


def list_check_runs(st: State, ctx: Ctx) -> Reply:
    sha = _commit(st, ctx.params["ref"])
    runs = sorted((r for r in st.check_runs.values() if r.head_sha == sha), key=lambda r: -r.id)
    if ctx.query.get("filter", "latest") == "latest":
        latest: dict[str, CheckRunRec] = {}
        for run in runs:
            latest.setdefault(run.name, run)
        runs = list(latest.values())
    if name := ctx.query.get("check_name"):
        runs = [r for r in runs if r.name == name]
    if status := ctx.query.get("status"):
        runs = [r for r in runs if r.status == status]
    chunk, headers = paginate(ctx, runs)
    body = {
        "total_count": len(runs),
        "check_runs": [check_run_json(st, r, ctx.urls) for r in chunk],
    }
    return Reply(200, body, headers=headers)


def _output(body: Json) -> Json:
    raw = body.get("output")
    return cast("Json", raw) if isinstance(raw, dict) else {}


def create_check_run(st: State, ctx: Ctx) -> Reply:
    if not ctx.installation:
        raise ApiError(403, "You must authenticate via a GitHub App.")
    body = ctx.json()
    output = _output(body)
    run = set_check_run(
        st,
        _commit(st, string(body, "head_sha") or ""),
        string(body, "name") or "",
        status=string(body, "status", required=False) or "queued",
        conclusion=string(body, "conclusion", required=False),
        title=string(output, "title", required=False),
        summary=string(output, "summary", required=False),
        text=string(output, "text", required=False),
        details_url=string(body, "details_url", required=False),
        external_id=string(body, "external_id", required=False),
        actor=ctx.caller().login,
    )
    return Reply(201, check_run_json(st, run, ctx.urls))


def _run(st: State, ctx: Ctx) -> CheckRunRec:
    run = st.check_runs.get(ctx.int_param("check_run_id"))
    if run is None:
        raise ApiError(404, "Not Found")
    return run


def get_check_run(st: State, ctx: Ctx) -> Reply:
    return Reply(200, check_run_json(st, _run(st, ctx), ctx.urls))


def update_check_run(st: State, ctx: Ctx) -> Reply:
    if not ctx.installation:
        raise ApiError(403, "You must authenticate via a GitHub App.")
    run = _run(st, ctx)
    body = ctx.json()
    output = _output(body)
    now = st.tick()
    run.status = string(body, "status", required=False) or run.status
    if (conclusion := string(body, "conclusion", required=False)) is not None:
        run.conclusion, run.status = conclusion, "completed"
    completes = run.status == "completed" and run.completed_at is None
    if completes:
        run.completed_at = now
    run.title = string(output, "title", required=False) or run.title
    run.summary = string(output, "summary", required=False) or run.summary
    run.text = string(output, "text", required=False) or run.text
    if completes:
        hooks.check_run(st, run, "completed", ctx.caller().login)
    return Reply(200, check_run_json(st, run, ctx.urls))


def create_status(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("write")
    body = ctx.json()
    sha = ctx.params["sha"].lower()
    if st.git.commit(sha) is None:
        raise ApiError(422, f"No commit found for SHA: {sha}")
    status = set_status(
        st,
        sha,
        string(body, "context", required=False) or "default",
        string(body, "state") or "",
        string(body, "description", required=False),
        string(body, "target_url", required=False),
        user.login,
    )
    return Reply(201, status_json(st, status, ctx.urls))


def combined_status(st: State, ctx: Ctx) -> Reply:
    sha = _commit(st, ctx.params["ref"])
    latest = latest_statuses(st, sha)
    chunk, headers = paginate(ctx, latest)
    return Reply(
        200,
        {
            "state": combined_state(latest),
            "statuses": [status_json(st, s, ctx.urls, simple=True) for s in chunk],
            "sha": sha,
            "total_count": len(latest),
            "repository": repository_json(st, ctx.urls),
            "commit_url": f"{ctx.urls.repo}/commits/{sha}",
            "url": f"{ctx.urls.repo}/commits/{sha}/status",
        },
        headers=headers,
    )


def list_statuses(st: State, ctx: Ctx) -> Reply:
    sha = _commit(st, ctx.params["ref"])
    found = [s for s in reversed(st.statuses) if s.sha == sha]
    chunk, headers = paginate(ctx, found)
    return Reply(200, [status_json(st, s, ctx.urls) for s in chunk], headers=headers)


_R = "/repos/{owner}/{repo}"
ROUTES = [
    Route(
        "GET",
        f"{_R}/commits/{{ref:path}}/check-runs",
        list_check_runs,
        f"{_DOCS}/checks/runs#list-check-runs-for-a-git-reference",
    ),
    Route(
        "GET",
        f"{_R}/commits/{{ref:path}}/status",
        combined_status,
        f"{_DOCS}/commits/statuses#get-the-combined-status-for-a-specific-reference",
    ),
    Route(
        "GET",
        f"{_R}/commits/{{ref:path}}/statuses",
        list_statuses,
        f"{_DOCS}/commits/statuses#list-commit-statuses-for-a-reference",
    ),
    Route(
        "POST",
        f"{_R}/statuses/{{sha}}",
        create_status,
        f"{_DOCS}/commits/statuses#create-a-commit-status",
    ),
    Route("POST", f"{_R}/check-runs", create_check_run, f"{_DOCS}/checks/runs#create-a-check-run"),
    Route(
        "GET",
        f"{_R}/check-runs/{{check_run_id}}",
        get_check_run,
        f"{_DOCS}/checks/runs#get-a-check-run",
    ),
    Route(
        "PATCH",
        f"{_R}/check-runs/{{check_run_id}}",
        update_check_run,
        f"{_DOCS}/checks/runs#update-a-check-run",
    ),
]
