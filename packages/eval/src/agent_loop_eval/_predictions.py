"""Predictions made elsewhere, in SWE-bench's format, and how they pair with instances.

`agent-loop eval score` scores changes it did not make: any agent's output for a set of
instances, one JSON object per instance with SWE-bench's three fields (`instance_id`,
`model_name_or_path`, `model_patch`: a unified diff against the instance's
`base_commit`). The file is JSON lines (SWE-bench's `.jsonl`) or one JSON list (its
`.json`); `eval run` writes the same format (`predictions.jsonl`), so its changes can be
scored again. `gold_predictions` makes the instances' own reference fixes into
predictions (`model_name_or_path` `gold`): SWE-bench's sanity check of a dataset.

Pairing is by `instance_id`: an instance without a prediction is reported `missing`
(never resolved), a prediction naming no instance of the file is refused (a typo, or
the wrong instances file, would otherwise score nothing and say so nowhere).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from agent_loop_eval._instance import Instance
from agent_loop_eval._problems import read_text, validation_line
from agent_loop_eval._results import InstanceResult

__all__ = [
    "GOLD",
    "Prediction",
    "PredictionFileError",
    "gold_predictions",
    "missing_result",
    "pair_predictions",
    "read_predictions",
]

GOLD = "gold"
"""`model_name_or_path` of the instances' own reference fixes (SWE-bench's name)."""


class PredictionFileError(ValueError):
    """A predictions file that cannot be read as predictions (the message names the line)."""


class Prediction(BaseModel):
    """One change for one instance, made by whatever produced it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    instance_id: str
    model_name_or_path: str = ""
    """Who made it: a model name, an agent's name, `gold`."""
    model_patch: str = ""
    """The change as a unified diff against the instance's `base_commit` (git's format,
    or plain `---`/`+++` sections); empty: no change (never resolved)."""

    @field_validator("model_patch", "model_name_or_path", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        """SWE-bench writes `null` for an agent that produced nothing."""
        return "" if value is None else value


def read_predictions(path: Path) -> list[Prediction]:
    """The predictions of `path`: JSON lines, or one JSON list. Blank lines are skipped.

    Raises:
        PredictionFileError: A line is not a prediction, or two name the same instance.
        OSError: The file cannot be read.
    """
    try:
        text = read_text(path, "a predictions file is JSON lines, one prediction a line")
    except ValueError as exc:
        raise PredictionFileError(str(exc)) from None
    items: list[tuple[str, Any]] = []
    if text.lstrip().startswith("["):
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PredictionFileError(f"{path}: not a JSON list: {exc}") from None
        if not isinstance(data, list):
            raise PredictionFileError(f"{path}: not a JSON list of predictions")
        items = [(f"{path}: item {n}", item) for n, item in enumerate(cast("list[Any]", data), 1)]
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise PredictionFileError(f"{path}:{number}: not JSON: {exc}") from None
    predictions: list[Prediction] = []
    seen: dict[str, str] = {}
    for where, item in items:
        try:
            prediction = Prediction.model_validate(item)
        except ValidationError as exc:
            raise PredictionFileError(
                f"{where}: not a prediction: {validation_line(exc)}"
            ) from None
        except ValueError as exc:
            raise PredictionFileError(f"{where}: not a prediction: {exc}") from None
        if prediction.instance_id in seen:
            raise PredictionFileError(
                f"{where}: a second prediction for {prediction.instance_id} "
                f"(the first is at {seen[prediction.instance_id]})"
            )
        seen[prediction.instance_id] = where
        predictions.append(prediction)
    return predictions


def gold_predictions(instances: Iterable[Instance]) -> list[Prediction]:
    """Each instance's own reference fix (`patch`) as its prediction, named `gold`."""
    return [
        Prediction(instance_id=i.instance_id, model_name_or_path=GOLD, model_patch=i.patch)
        for i in instances
    ]


def pair_predictions(
    instances: Sequence[Instance], predictions: Sequence[Prediction]
) -> tuple[list[tuple[Instance, Prediction]], list[Instance], list[str]]:
    """Each instance with its prediction, in the instances' order.

    Returns:
        The pairs, the instances no prediction names (`missing`), and the ids of the
        predictions that name no instance of `instances`.
    """
    by_id = {p.instance_id: p for p in predictions}
    known = {i.instance_id for i in instances}
    pairs = [(i, by_id[i.instance_id]) for i in instances if i.instance_id in by_id]
    missing = [i for i in instances if i.instance_id not in by_id]
    strangers = [p.instance_id for p in predictions if p.instance_id not in known]
    return pairs, missing, strangers


def missing_result(instance: Instance) -> InstanceResult:
    """The result of an instance no prediction names: `missing`, never resolved."""
    return InstanceResult(
        instance_id=instance.instance_id,
        resolved=False,
        repo=instance.repo,
        base_commit=instance.base_commit,
        outcome="missing",
        reason="no prediction for this instance",
    )
