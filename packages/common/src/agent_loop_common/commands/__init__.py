"""Maintainer commands in comments: `/agent-loop build|review|stop|resume|status`.

People steer the agents from the thread they are already in, the way other coding
agents answer a mention or a label. The gateway honours a command as soon as its
webhook arrives; each agent's scheduled poll honours the same commands from the thread,
so a command works with or without the gateway, and both sides read it the same way.

```python
state = command_state(comments, trusted=lambda login: login in maintainers,
                      agent_login="agent-loop[bot]", kind="issue",
                      acknowledged=already_reacted)
if state.stopped:
    ...  # leave the target alone
if backoff and state.retry_requested_after(backoff.recorded_at):
    ...  # a trusted person asked for a new try: the back-off no longer holds
for cmd in state.pending:
    ...  # react with cmd.reaction; reply render_help() / render_status(...) if cmd.reply
```

Pure: no I/O. The caller lists the comments, looks up the trust of
`command_authors(...)`, and the reactions the agents already gave. The agents' polls do
that with `honour_commands`, the one effectful helper here (it also acknowledges).
"""

from agent_loop_common.commands._honour import honour_commands
from agent_loop_common.commands._parse import (
    COMMAND_PREFIX,
    KNOWN_WORDS,
    Command,
    CommandWord,
    parse_commands,
)
from agent_loop_common.commands._render import StatusComment, render_help, render_status
from agent_loop_common.commands._state import (
    REACTIONS,
    CommandComment,
    CommandState,
    IgnoredCommand,
    PendingCommand,
    Reaction,
    Reply,
    ThreadKind,
    command_authors,
    command_state,
)

__all__ = [
    "COMMAND_PREFIX",
    "KNOWN_WORDS",
    "REACTIONS",
    "Command",
    "CommandComment",
    "CommandState",
    "CommandWord",
    "IgnoredCommand",
    "PendingCommand",
    "Reaction",
    "Reply",
    "StatusComment",
    "ThreadKind",
    "command_authors",
    "command_state",
    "honour_commands",
    "parse_commands",
    "render_help",
    "render_status",
]
