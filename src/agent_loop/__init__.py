"""agent-loop: the user-facing CLI of the three agents (builder, reviewer, distiller).

- `agent_loop.cli`: the `agent-loop` command (`demo`, `run`, `status`, `deploy`).
- `agent_loop.agents`: one tick of an agent through its package's `run_once`.
- `agent_loop.status`: runs, metrics and lessons read from local memory.
- `agent_loop.demo` (with `demo_project`, `demo_scripts*`, `demo_code`, `demo_model`,
  `demo_show`): the offline demo against the GitHub emulator with a replayed model.
- `agent_loop.deploy`: one agent's deploy (`agent-loop deploy`).

Nothing is imported here: `agent-loop --help` and `status` stay fast, and importing an
agent package (its Flyte environment) waits until a command needs it.
"""

__all__: list[str] = []
