"""Counts from a sub-task's own facade merge into the run's, as if made by one client."""

from __future__ import annotations

import json

from agent_loop_common.github import RequestStats


def test_merge_adds_another_facades_counts() -> None:
    run, action = RequestStats(), RequestStats()
    run.record("get", "/repos/{owner}/{repo}/issues", 304)
    action.record("POST", "/repos/{owner}/{repo}/pulls", 201)
    action.record("GET", "/repos/{owner}/{repo}/issues", 304)
    action.record("GET", "/repos/{owner}/{repo}/issues", 200)

    run.merge(action.by_route())
    run.merge(json.loads(json.dumps({"POST /repos/{owner}/{repo}/pulls": {201: 1}})))  # str keys

    assert run.by_route() == {
        "GET /repos/{owner}/{repo}/issues": {200: 1, 304: 2},
        "POST /repos/{owner}/{repo}/pulls": {201: 2},
    }
    assert (run.total, run.not_modified, run.billable) == (5, 2, 3)
