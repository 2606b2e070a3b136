"""Lessons: the distiller's itemized, provenance-carrying advice to the agents.

A lesson belongs to the repository it was learned in (`repo`, and new ids carry it), knows
that repository's visibility (so a private repository's lesson never reaches a public
one) and who wrote it: the distiller, the operator (`agent-loop lessons`), or a
maintainer (an edit to the lessons section of the repository's instructions). It may cite
paths, symbols and commands; a run checks them against its base tree before showing it
(`citation_status`). Nothing is silently deleted: a retired or superseded lesson is kept
as a `RetiredLesson` with its reason, who retired it and what replaced it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.records._exposure import WorkKind
from agent_loop_common.records._parts import Role

__all__ = [
    "MAX_LESSON_EVENTS",
    "Citation",
    "CitationKind",
    "CitationStatus",
    "DiagnosisAction",
    "Lesson",
    "LessonAuthor",
    "LessonBook",
    "LessonDiagnosis",
    "LessonEvent",
    "LessonReplay",
    "LessonState",
    "OperatorEdit",
    "OutcomeMetric",
    "ReplayArm",
    "ReplayPair",
    "RetiredLesson",
    "StaleLesson",
    "Visibility",
]

MAX_LESSON_EVENTS = 12
"""Most history events kept per lesson (the most recent); the archive keeps the rest."""

Visibility = Literal["public", "private", ""]
"""A repository's visibility as GitHub reports it; empty when unknown (treated as private
wherever sharing is decided)."""

CitationKind = Literal["path", "symbol", "command"]
"""What a citation names: a file or folder, a name defined in the code, a command line."""


class LessonAuthor(StrEnum):
    """Who wrote or changed a lesson."""

    DISTILLER = "distiller"
    """The distiller agent, from graded runs."""
    OPERATOR = "operator"
    """Whoever runs the loop, through `agent-loop lessons`."""
    MAINTAINER = "maintainer"
    """A trusted person, through the lessons section of the repository's instructions."""


class CitationStatus(StrEnum):
    """What the last check of a lesson's citations found."""

    UNCHECKED = "unchecked"
    """Never checked, or the lesson cites nothing."""
    OK = "ok"
    """Every citation was found in the last run's base tree."""
    BROKEN = "broken"
    """A citation was missing: the lesson is hidden until the distiller fixes or retires it."""


class Citation(BaseModel):
    """One thing a lesson names that must still exist for the lesson to hold."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: CitationKind
    """`path`: a file or folder; `symbol`: a name defined in the code; `command`: a
    command line whose repository paths and make targets must exist."""
    value: str
    """The path, the symbol's name, or the command line."""
    path: str = ""
    """For a symbol: the file it lives in (checked there only); empty: anywhere."""

    def label(self) -> str:
        """`kind value` (and `in path`), for messages and the ledger."""
        where = f" in {self.path}" if self.path else ""
        return f"{self.kind} {self.value}{where}"


class LessonEvent(BaseModel):
    """One change in a lesson's life, for its history in the report and the CLI."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    at: AwareDatetime
    op: str
    """`added`, `reworded`, `merged`, `pinned`, `unpinned`, `stale`, `fixed`, `retired`..."""
    by: LessonAuthor = LessonAuthor.DISTILLER
    login: str = ""
    """The GitHub login of a maintainer (or the operator's name, when known)."""
    detail: str = ""


class LessonState(StrEnum):
    """Where a lesson stands in the measurement of its effect (since 1.3).

    `proving` while the evidence is undecided; `proven` once an always-valid test says
    it helps (it keeps a small holdout so decay is noticed); `no_effect` once enough
    exposures exclude a useful gain, `harmful` once the test says it hurts. The last two
    retire the lesson (kept as a `RetiredLesson` with the effect as its reason).
    """

    PROVING = "proving"
    PROVEN = "proven"
    NO_EFFECT = "no_effect"
    HARMFUL = "harmful"


class OutcomeMetric(StrEnum):
    """The binary outcomes of a run a lesson's effect is measured on (higher is better)."""

    FIRST_TRY_TESTS = "first_try_tests"
    """The sandbox's verdict on try 1 was `passed` (no evidence never counts as a pass)."""
    FIRST_TRY_VERIFIED = "first_try_verified"
    """The verifier accepted try 1."""
    NO_REGRESSION = "no_regression"
    """The run's checked change broke no test that passed on the base."""
    MERGED = "merged"
    """The pull request was merged; closed unmerged counts as a failure only when no
    trusted person gave a reason (duplicate, superseded, not planned: not counted)."""
    NO_REVIEW_FIX = "no_review_fix"
    """The pull request was decided without a reviewer fix commit."""
    NO_UNRESOLVED_THREADS = "no_unresolved_threads"
    """No review thread was left unresolved when the pull request was merged or closed."""
    FIRST_CI_GREEN = "first_ci_green"
    """The first CI result on the head the builder pushed passed (no CI: not counted)."""
    NOT_REVERTED = "not_reverted"
    """The merge was not reverted on the default branch within 30 days (observed once a
    revert is seen or the 30 days have passed)."""


DiagnosisAction = Literal["keep", "narrow", "reword", "retire"]
"""What a lesson's diagnosis calls for (see `LessonDiagnosis`)."""


class LessonDiagnosis(BaseModel):
    """Why a lesson does what it does, as the distiller last measured it, and what it did.

    Kept on the lesson (and so in the archive when it leaves the book) for the report's
    ledger and `agent-loop lessons show`: people see what was measured, how compliance
    was judged, and whether the action was carried out or only flagged for them.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    at: AwareDatetime
    """When the distiller diagnosed it."""
    applicability: float | None = None
    """Share of the runs that had it in their book where its scope matched the work."""
    compliance: float | None = None
    """Share of the checked runs that showed it which used what it names (None: none checked)."""
    base_compliance: float | None = None
    """The same share among held-out runs: what runs do without seeing it."""
    checked: NonNegativeInt = 0
    """Shown runs whose compliance was decided."""
    judged_by: Literal["trace", "model", "trace+model", ""] = ""
    """How compliance was decided: the lesson's quoted spans and citations found in the
    run's tool trace, a budgeted model judgment (lessons that name nothing), or both."""
    action: DiagnosisAction = "keep"
    """What the diagnosis calls for."""
    done: bool = False
    """The distiller carried the action out (False: flagged for people only)."""
    note: str = ""
    """The reason, what was done, or why it was only flagged."""

    def summary(self) -> str:
        """One line for people (the CLI, the ledger)."""
        parts: list[str] = []
        if self.applicability is not None:
            parts.append(f"applies to {self.applicability:.0%} of runs")
        if self.compliance is not None:
            how = {"trace": "from the tool trace", "model": "by the model"}.get(
                self.judged_by, "from the tool trace and by the model"
            )
            base = "" if self.base_compliance is None else f", {self.base_compliance:.0%} held out"
            parts.append(
                f"followed in {self.compliance:.0%} of {self.checked} checked shown runs"
                f"{base} (judged {how})"
            )
        else:
            parts.append("compliance unknown (nothing checked yet)")
        if self.action != "keep":
            parts.append(f"{self.action}: {'done' if self.done else 'flagged'}")
        return "; ".join(parts) + (f" - {self.note}" if self.note else "")


class ReplayArm(BaseModel):
    """One side of a paired replay: the eval's result for one instance, in brief."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    resolved: bool = False
    """Every hidden test (`FAIL_TO_PASS`, `PASS_TO_PASS`) passed with the produced change."""
    outcome: str = "error"
    """How the replayed build ended (`change`, `rejected`, `declined`, `error`, ...)."""
    lesson_shown: bool = False
    """The lesson reached the build's prompt (the eval's `lesson_ids` named it)."""
    llm_calls: NonNegativeInt = 0
    tokens: NonNegativeInt = 0
    """Prompt and completion tokens of the build."""
    cost_usd: float = 0.0
    error: str = ""
    """An error of the eval itself or of the call (the pair then counts for nothing)."""


class ReplayPair(BaseModel):
    """One mined instance replayed twice, same base and same problem: with the lesson
    and without it (since 1.5).

    Only a pair whose two builds ran (no error) and whose "with" side showed the lesson
    while the "without" side showed no lesson at all is `counted`; the rest are kept so
    the instance is not replayed again for this lesson, with the reason in `note`.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str
    """The eval's instance (`owner__name-N`)."""
    base_commit: str = ""
    at: AwareDatetime
    with_lesson: ReplayArm
    without: ReplayArm
    counted: bool = False
    note: str = ""
    """Why the pair does not count (empty when it does)."""

    @property
    def sign(self) -> int:
        """+1 only the build with the lesson resolved it, -1 only the one without, 0 both
        or neither (or the pair does not count): the sign test's datum."""
        if not self.counted or self.with_lesson.resolved == self.without.resolved:
            return 0
        return 1 if self.with_lesson.resolved else -1


class LessonReplay(BaseModel):
    """A lesson's replay evidence (`AGENT_LOOP_LESSON_REPLAY=on`), kept apart from the
    live evidence of its shown and held-out runs (since 1.5).

    Each pair replays one mined instance the lesson applies to with it and without it;
    the decision uses the discordant pairs only (resolved on one side alone), whose
    e-value multiplies the live one (`agent_loop_distiller` `_effect.replay_e_values`).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    pairs: list[ReplayPair] = Field(default_factory=list[ReplayPair])
    """Every instance tried for the lesson, oldest first (bounded by the replay budget)."""

    @property
    def counted(self) -> int:
        """Pairs that count."""
        return sum(p.counted for p in self.pairs)

    @property
    def wins(self) -> int:
        """Counted pairs resolved only with the lesson."""
        return sum(p.sign > 0 for p in self.pairs)

    @property
    def losses(self) -> int:
        """Counted pairs resolved only without it."""
        return sum(p.sign < 0 for p in self.pairs)

    @property
    def both(self) -> int:
        """Counted pairs resolved on both sides."""
        return sum(p.counted and p.with_lesson.resolved and p.without.resolved for p in self.pairs)

    @property
    def llm_calls(self) -> int:
        """Model calls spent on the lesson's replays, both sides of every pair."""
        return sum(p.with_lesson.llm_calls + p.without.llm_calls for p in self.pairs)

    @property
    def cost_usd(self) -> float:
        """What the replays cost, both sides of every pair."""
        return sum(p.with_lesson.cost_usd + p.without.cost_usd for p in self.pairs)

    def tried(self, instance_id: str) -> bool:
        """Whether the instance was replayed for this lesson already."""
        return any(p.instance_id == instance_id for p in self.pairs)

    def summary(self) -> str:
        """One line for people: `8 pairs: 5 only with it, 1 only without, 1 both, 1
        neither (2 not counted)`."""
        counted = self.counted
        neither = counted - self.wins - self.losses - self.both
        line = (
            f"{counted} pair(s): {self.wins} resolved only with it, {self.losses} only "
            f"without, {self.both} both, {neither} neither"
        )
        skipped = len(self.pairs) - counted
        return line + (f" ({skipped} not counted)" if skipped else "")


class Lesson(BaseModel):
    """One piece of advice, with the runs it was learned from."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    """Stable id, quoted by `RunRecord.lesson_ids` when the lesson was in context. Since
    1.3 new ids carry the repository: `owner/name#L-1a2b3c4d`."""
    text: str
    """The advice as shown to the agent (untrusted context, budgeted by the digest)."""
    roles: list[Role] = Field(default_factory=list[Role])
    """Agents the lesson applies to; empty means all."""
    source_run_ids: list[str] = Field(default_factory=list[str])
    """Runs whose records taught this lesson (provenance)."""
    created_at: AwareDatetime
    """When the lesson was first written."""
    updated_at: AwareDatetime
    """When the lesson was last edited."""
    source_refs: list[str] = Field(default_factory=list[str])
    """Issues and pull requests those runs worked on or opened (`issue-12`, `pr-15`), so a
    human can check the lesson against what happened (since 1.1)."""
    hits: NonNegativeInt = 0
    """How many runs have backed the lesson so far (evidence added, confirmed or merged in);
    0 in books written before 1.1."""
    last_seen_at: AwareDatetime | None = None
    """When evidence last backed the lesson; a lesson unseen for long expires (since 1.1;
    `None`: use `updated_at`)."""
    general: bool = False
    """The distiller judged it true of any repository, not only the one it was learned
    in: shared with other repositories when its repository is listed in
    `AGENT_LOOP_SHARE_LESSONS_FROM` (since 1.2)."""
    repo: str = ""
    """The repository (`owner/name`) it was learned in (since 1.3; empty in older books:
    the book's own repository)."""
    visibility: Visibility = ""
    """That repository's visibility when the lesson was last written (since 1.3)."""
    author: LessonAuthor = LessonAuthor.DISTILLER
    """Who wrote the current text (since 1.3)."""
    author_login: str = ""
    """The maintainer's GitHub login when `author` is a maintainer (since 1.3)."""
    citations: list[Citation] = Field(default_factory=list[Citation])
    """Paths, symbols and commands the lesson relies on, checked before each use (1.3)."""
    citation_status: CitationStatus = CitationStatus.UNCHECKED
    """What the last check found (1.3): `broken` hides the lesson from every run."""
    stale_reason: str = ""
    """Which citations were missing, and at which commit (1.3)."""
    pinned: bool = False
    """The operator pinned it (1.3): never expired for age nor retired by the distiller."""
    history: list[LessonEvent] = Field(default_factory=list[LessonEvent])
    """The most recent changes, oldest first, at most `MAX_LESSON_EVENTS` (1.3)."""
    kinds: list[WorkKind] = Field(default_factory=list[WorkKind])
    """Work kinds the lesson applies to; empty means all (1.3). Narrowing a lesson that
    rarely applies sets this."""
    target_metric: OutcomeMetric | None = None
    """The outcome the lesson means to improve; `None`: `first_try_tests` (1.3)."""
    state: LessonState = LessonState.PROVING
    """The measured verdict on the lesson's effect (1.3)."""
    supersedes: list[str] = Field(default_factory=list[str])
    """Ids of the lessons this one replaced: the distiller rewording an ignored lesson
    writes a new version (a new text is a new treatment, measured afresh) (1.4)."""
    diagnosis: LessonDiagnosis | None = None
    """The distiller's last diagnosis and the action it took or flagged (1.4)."""
    replay: LessonReplay | None = None
    """Its replay evidence: mined instances replayed with and without it (1.5; `None`:
    never replayed)."""

    @property
    def metric(self) -> OutcomeMetric:
        """The metric its effect is decided on."""
        return self.target_metric or OutcomeMetric.FIRST_TRY_TESTS

    def applies_to(self, role: Role, kind: WorkKind | None) -> bool:
        """Whether its scope matches a run of `role` on work of `kind` (citations aside)."""
        if self.roles and role not in self.roles:
            return False
        return not self.kinds or kind is None or kind in self.kinds


class LessonBook(BaseModel):
    """The whole `context/lessons.json` document."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.5"
    """Same versioning rule as `RunRecord` (1.1 added the lessons' provenance refs, hits
    and last-seen time; 1.2 `general`; 1.3 repository, visibility, author, citations,
    pin and history; 1.4 `supersedes` and `diagnosis`; 1.5 `replay`)."""
    lessons: list[Lesson] = Field(default_factory=list[Lesson])
    """Current lessons, most useful first."""

    def for_role(self, role: Role) -> list[Lesson]:
        """Lessons that apply to `role` (a lesson with a broken citation applies to none)."""
        return [
            lesson
            for lesson in self.lessons
            if (not lesson.roles or role in lesson.roles)
            and lesson.citation_status is not CitationStatus.BROKEN
        ]


class RetiredLesson(BaseModel):
    """A lesson taken out of the book, kept for good with why and what replaced it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.0"
    lesson: Lesson
    """The lesson as it was when it left the book."""
    kind: Literal["retired", "superseded"]
    """`superseded`: merged into or replaced by `replaced_by`; `retired`: removed."""
    reason: str
    """Why (the distiller's reason, the operator's, or the maintainer's edit)."""
    replaced_by: list[str] = Field(default_factory=list[str])
    """Ids of the lessons that replaced it."""
    by: LessonAuthor = LessonAuthor.DISTILLER
    login: str = ""
    at: AwareDatetime


class StaleLesson(BaseModel):
    """A lesson a run hid because a citation was missing from its base tree."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    lesson_id: str
    broken: list[str] = Field(default_factory=list[str])
    """The missing citations (`Citation.label`)."""
    base_sha: str = ""
    """The commit they were checked against."""


class OperatorEdit(BaseModel):
    """An operator's edit through `agent-loop lessons`, applied by every distiller tick.

    The distiller is the context's only writer: the CLI changes the book at once for the
    next runs, and keeps this edit so that a distiller tick racing with it re-applies it
    instead of overwriting it. Applying an edit twice changes nothing.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.0"
    op: Literal["retire", "pin", "unpin"]
    lesson_id: str
    reason: str = ""
    login: str = ""
    """Who ran the command, as the operator's machine knows them (`$USER`)."""
    at: AwareDatetime
