"""The claim ("dibs") protocol: exactly one run works a target at a time.

A run claims an issue, a pull request or a repository-level job before working it. A
compare-and-swap on a git ref decides races (exactly one of N racers wins); a comment with
an invisible marker tells humans (and cheap pre-checks) who holds what. Claims expire,
are re-entrant only for the same run, and are released on every exit path. Failed targets
rest with exponential backoff recorded on the target itself until a human touches it.

Pure parts (marker grammar, state machine, backoff, run ids) do no I/O; `Claimer` holds
the effects and takes the GitHub facade. The design is in `docs/claims.md`.
"""

from agent_loop_common.claims._atomic import DEFAULT_NAMESPACE, ClaimRefs, RefHead, RefsAPI
from agent_loop_common.claims._backoff import (
    Backoff,
    BackoffPolicy,
    backoff_resetters,
    backoff_state,
    is_backed_off,
)
from agent_loop_common.claims._errors import (
    ClaimError,
    ClaimLost,
    InvalidMarker,
    InvalidRunId,
    NotClaimed,
)
from agent_loop_common.claims._marker import (
    BackoffMarker,
    DibsMarker,
    Op,
    format_time,
    parse_backoff,
    parse_dibs,
    parse_time,
    render_backoff,
    render_dibs,
    safe_text,
)
from agent_loop_common.claims._operator import (
    ClaimView,
    OperatorRelease,
    claim_of,
    list_claims,
    parse_target,
    release_claim,
)
from agent_loop_common.claims._ports import ClaimsGitHub
from agent_loop_common.claims._protocol import Claimer, TargetView
from agent_loop_common.claims._runid import (
    RUN_ID_PATTERN,
    is_run_id,
    new_run_id,
    run_id_time,
    validate_run_id,
)
from agent_loop_common.claims._state import (
    ClaimState,
    CommentLike,
    Holder,
    RefDecision,
    UserLike,
    claim_state,
    decide_ref,
)
from agent_loop_common.claims._target import Claim, ClaimTarget

__all__ = [
    "DEFAULT_NAMESPACE",
    "RUN_ID_PATTERN",
    "Backoff",
    "BackoffMarker",
    "BackoffPolicy",
    "Claim",
    "ClaimError",
    "ClaimLost",
    "ClaimRefs",
    "ClaimState",
    "ClaimTarget",
    "ClaimView",
    "Claimer",
    "ClaimsGitHub",
    "CommentLike",
    "DibsMarker",
    "Holder",
    "InvalidMarker",
    "InvalidRunId",
    "NotClaimed",
    "Op",
    "OperatorRelease",
    "RefDecision",
    "RefHead",
    "RefsAPI",
    "TargetView",
    "UserLike",
    "backoff_resetters",
    "backoff_state",
    "claim_of",
    "claim_state",
    "decide_ref",
    "format_time",
    "is_backed_off",
    "is_run_id",
    "list_claims",
    "new_run_id",
    "parse_backoff",
    "parse_dibs",
    "parse_target",
    "parse_time",
    "release_claim",
    "render_backoff",
    "render_dibs",
    "run_id_time",
    "safe_text",
    "validate_run_id",
]
