"""One baseline per base commit and command for the instances of a run, not one each.

Every build checks its change against the repository's tests on the base commit (its
baseline), and the scoring run reads the same baseline for what the pytest guard finds
there. Instances that share a base commit, a test command and a setup (a SWE-bench file
with several issues at one commit, the same instance under two ids) would each run it
again. `shared_baselines` keeps one store for every instance evaluated in this process
while it is open: `env.eval_run` opens it around its fan-out, so in Flyte's local mode,
where the instance tasks run in the run task's process and event loop, a baseline runs
once per key in a run, and instances that want it at the same moment wait for the one
run in flight (`BaselineCache`). On a cluster each instance is its own container and
keeps its own store.

The key is the live runs' (`baseline_key`: base SHA, command, setup command); the
dependency files a setup installs from are part of the base commit's tree, so the SHA
covers them, and nothing is reused across keys.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from agent_loop_common.sandbox import BaselineCache, BaselineStore

__all__ = ["RUN_BASELINES", "shared_baselines", "shared_store"]

RUN_BASELINES = 256
"""Most baselines a run's store keeps (least recently used dropped): a base commit's
instances usually run close together, and each result holds only the ends of the output."""

_stores: list[BaselineStore] = []


@contextmanager
def shared_baselines(store: BaselineStore | None = None) -> Generator[BaselineStore]:
    """Share baselines among the instances `evaluate`d in this process while the block
    runs (`store`, or a new `BaselineCache` of `RUN_BASELINES`); yields the store."""
    shared = store if store is not None else BaselineCache(max_entries=RUN_BASELINES)
    _stores.append(shared)
    try:
        yield shared
    finally:
        _stores.remove(shared)


def shared_store() -> BaselineStore | None:
    """The store of the innermost open `shared_baselines`, if any."""
    return _stores[-1] if _stores else None
