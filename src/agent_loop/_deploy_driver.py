"""Load one agent (or app) package in a fresh interpreter and describe, dry-run or deploy it.

Flyte bundles every module loaded in the deploying process that lives under the root
dir (`copy_style="loaded_modules"`). So this script runs in its own interpreter, started
with `python -c <this source>` by `agent_loop.deploy`: it has no `__file__`, imports
nothing of `agent_loop`, and only stdlib and flyte before it loads the agent. What the
bundle then holds is exactly what the agent's modules import.

It imports the agent's modules by their real names (`agent_loop_builder.env`), not by
path like `flyte deploy --recursive` does (`packages.builder.src.agent_loop_builder.env`):
a package `__init__` that imports its own env module would otherwise load it under two
names and the deploy fails. Workspace members other than the agent and `common` are taken
off `sys.path`, so an import of another agent fails here as it would in the image.

Input: one JSON argument (`root`, `agent`, `src_dirs` (the agent's, then those of the
members it builds on, then common's),
`hide` (other members' source dirs, e.g. editable installs), `config`, `mode`, `version`,
`report`). Output: a JSON report at `report`. An `AppEnvironment` (the gateway) is
described like a task environment, with its service settings under `app` and its
serialized app spec (image, `fserve` command, env, ports) in the dry run's `apps`. Modes: `inspect` (load and describe),
`dry-run` (also serialize every task against the config's org/project/domain with the
real code bundle built locally; image existence is not checked, so no registry is
contacted), `deploy` (build images with the configured builder, upload, register).

It reads flyte's private image renderer and app fields on purpose: the report must show
the Dockerfile and service exactly as flyte would build them, and flyte exposes no public
form of either; the deploy tests pin the flyte version this was checked against.
"""

# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import pathlib
import sys
import tarfile
import tempfile
import tomllib
import traceback
from typing import Any

TESTING_MARKERS = ("agent-loop-testing", "dulwich", "starlette", "uvicorn", "pytest")
"""Packages only tests need (the test doubles' member first): an image must not pin them."""


def _requirement_name(line: str, base: pathlib.Path) -> str | None:
    """The normalised distribution a requirements line installs (None: no requirement).

    `name==1.0`, `name @ url` and `name[extra]>=1` give `name`; a local path (`-e
    ./packages/testing`, `./x`, `file:///x`) gives the `[project] name` of the pyproject
    there, so a workspace member exported by path is recognised by name too.
    """
    text = line.split(" #", 1)[0].strip()
    if text.startswith("-e "):
        text = text[3:].strip()
    if not text or text.startswith(("#", "-")):
        return None
    if text.startswith((".", "/", "file:")):
        folder = base / text.removeprefix("file://")
        try:
            data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
            return str(data["project"]["name"]).lower().replace("_", "-")
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return folder.name.lower().replace("_", "-")
    for i, char in enumerate(text):
        if char in " [<>=!~;@":
            text = text[:i]
            break
    return text.lower().replace("_", "-").replace(".", "-")


def _sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rel(path: str | pathlib.Path, root: pathlib.Path) -> str:
    return pathlib.Path(os.path.abspath(path)).relative_to(root).as_posix()


def _isolate_sys_path(
    root: pathlib.Path, keep: list[pathlib.Path], hide: list[pathlib.Path]
) -> None:
    """Put the agent's and common's source dirs first; drop other members' and the root's."""
    kept = [str(d) for d in keep]
    hidden = {os.path.abspath(h) for h in hide}

    installed = [pathlib.Path(os.path.abspath(p)) for p in (sys.prefix, sys.base_prefix)]

    def dropped(entry: str) -> bool:
        absolute = pathlib.Path(os.path.abspath(entry or "."))
        if any(absolute.is_relative_to(prefix) for prefix in installed):
            return False  # the venv (which may live under the root) holds the dependencies
        return str(absolute) in hidden or absolute.is_relative_to(root)

    sys.path[:] = [*kept, *(p for p in sys.path if p not in kept and not dropped(p))]
    bin_dir = os.path.dirname(sys.executable)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def _module_names(src_dir: pathlib.Path) -> list[str]:
    """Every importable module of the packages in `src_dir`, except `__main__`."""
    names: list[str] = []
    for init in sorted(src_dir.glob("*/__init__.py")):
        package = init.parent
        for path in sorted(package.rglob("*.py")):
            rel = path.relative_to(src_dir).with_suffix("")
            parts = rel.parts
            if parts[-1] == "__main__" or any(p == "__pycache__" for p in parts):
                continue
            if not all(
                (src_dir.joinpath(*parts[:i]) / "__init__.py").exists()
                for i in range(1, len(parts))
            ):
                continue
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    names.extend(p.stem for p in sorted(src_dir.glob("*.py")))
    return names


def _load(src_dir: pathlib.Path) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    for name in _module_names(src_dir):
        try:
            importlib.import_module(name)
        except Exception as exc:
            errors.append({"module": name, "error": f"{type(exc).__name__}: {exc}"})
    return errors


def _user_module_files(root: pathlib.Path) -> list[str]:
    prefixes = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix)}
    files: set[str] = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        absolute = os.path.abspath(path)
        if any(absolute.startswith(p + os.sep) for p in prefixes):
            continue
        if pathlib.Path(absolute).is_relative_to(root):
            files.add(_rel(absolute, root))
    return sorted(files)


def _bundle_files(root: pathlib.Path) -> tuple[list[dict[str, str]], str]:
    """The files Flyte's code bundle would hold, listed by the SDK's own function."""
    from flyte._code_bundle._ignore import FlyteIgnore, GitIgnore, StandardIgnore
    from flyte._code_bundle._packaging import list_files_to_bundle

    files, digest = list_files_to_bundle(
        root, True, StandardIgnore, GitIgnore, FlyteIgnore, copy_style="loaded_modules"
    )
    listed = sorted({_rel(f, root) for f in files})
    return [{"path": p, "sha256": _sha256(root / p)} for p in listed], digest


async def _render_dockerfile(image: Any) -> str:
    """The Dockerfile the local builder would write for `image` (the SDK's own renderer)."""
    from flyte._internal.imagebuild import docker_builder as db
    from flyte._internal.imagebuild.utils import get_and_list_dockerignore

    dockerfile = db.DOCKER_FILE_UV_BASE_TEMPLATE.substitute(
        BASE_IMAGE=image.base_image,
        PYTHON_VERSION=f"{image.python_version[0]}.{image.python_version[1]}",
    )
    ignore = get_and_list_dockerignore(image)
    with tempfile.TemporaryDirectory() as context:
        for layer in image._layers:
            dockerfile = await db._process_layer(layer, pathlib.Path(context), dockerfile, ignore)
    if db._image_creates_flyte_user(image):
        dockerfile += db.DOCKER_FILE_FLYTE_USER_FOOTER
    return dockerfile + db.DOCKER_FILE_BASE_FOOTER.substitute(F_IMG_ID=image.uri)


def _describe_locks(image: Any, root: pathlib.Path) -> list[dict[str, Any]]:
    """The requirements files the image installs, and any test-only package they pin."""
    locks: list[dict[str, Any]] = []
    for layer in image._layers:
        file = getattr(layer, "file", None)
        if type(layer).__name__ != "Requirements" or file is None:
            continue
        path = pathlib.Path(file).resolve()
        lines = path.read_text(encoding="utf-8").splitlines()
        pinned = {_requirement_name(ln, root) for ln in lines} - {None}
        locks.append(
            {
                "path": _rel(path, root) if path.is_relative_to(root) else str(path),
                "sha256": _sha256(path),
                "testing_packages": sorted(m for m in TESTING_MARKERS if m in pinned),
            }
        )
    return locks


async def _describe_image(image: Any, root: pathlib.Path) -> dict[str, Any]:
    if isinstance(image, str):
        return {"uri": image, "identity": image, "name": None, "python": None, "locks": []}
    try:
        return await _describe_flyte_image(image, root)
    except Exception as exc:  # e.g. a missing lock: the image cannot even be hashed
        return {
            "identity": None,
            "name": image.name,
            "locks": [],
            "error": f"{type(exc).__name__}: {exc}",
        }


async def _describe_flyte_image(image: Any, root: pathlib.Path) -> dict[str, Any]:
    locks = _describe_locks(image, root)
    tag = image._final_tag
    return {
        "uri": image.uri,
        "identity": f"{image.name}:{tag}",
        "name": image.name,
        "tag": tag,
        "python": ".".join(str(v) for v in image.python_version),
        "base_image": image.base_image,
        "locks": locks,
        "dockerfile": await _render_dockerfile(image),
    }


async def _describe_triggers(task: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Serialize each trigger as deploy does: a trigger bound to a missing input raises."""
    from flyte._internal.runtime.convert import convert_upload_default_inputs
    from flyte._internal.runtime.trigger_serde import to_task_trigger
    from flyte._internal.runtime.types_serde import transform_native_to_typed_interface
    from google.protobuf.json_format import MessageToDict

    typed = transform_native_to_typed_interface(task.native_interface)
    assert typed is not None
    defaults = await convert_upload_default_inputs(task.interface)
    triggers: list[dict[str, Any]] = []
    errors: list[str] = []
    for trigger in task.triggers:
        try:
            wire = await to_task_trigger(trigger, task.name, typed.inputs, defaults)
            triggers.append(MessageToDict(wire, preserving_proto_field_name=True))
        except Exception as exc:
            errors.append(f"{task.name}: trigger {trigger.name!r}: {exc}")
    return triggers, errors


def _describe_app(env: Any) -> dict[str, Any] | None:
    """An `AppEnvironment`'s service settings (None for a `TaskEnvironment`)."""
    from flyte.app import AppEnvironment

    if not isinstance(env, AppEnvironment):
        return None
    server = env._server
    return {
        "port": env.get_port().port,
        "requires_auth": env.requires_auth,
        "scaling": repr(env.scaling),
        "server": f"{server.__module__}.{server.__qualname__}" if server else None,
        "args": env.args,
        "command": env.command,
    }


def _secret_keys(declared: Any) -> list[str]:
    """Keys of the secrets an env or task declares (a string is its own key)."""
    if declared is None:
        return []
    items: list[Any] = [*declared] if isinstance(declared, (list, tuple)) else [declared]
    return sorted(s if isinstance(s, str) else str(s.key) for s in items)


def _task_runtime(task: Any) -> dict[str, Any]:
    """What one task runs with beyond its env: its own resources, secrets, env vars and
    image (a raw-container task, like the tests' task, sets its own)."""
    resources = getattr(task, "resources", None)
    image = getattr(task, "image", None)
    return {
        "resources": None
        if resources is None
        else {"cpu": str(resources.cpu), "memory": str(resources.memory)},
        "secrets": _secret_keys(getattr(task, "secrets", None)),
        "env_vars": dict(sorted(dict[str, str](getattr(task, "env_vars", None) or {}).items())),
        "image": image if isinstance(image, (str, type(None))) else str(image.base_image),
    }


async def _describe_env(env: Any, root: pathlib.Path) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = []
    for task in getattr(env, "tasks", {}).values():
        triggers, errors = await _describe_triggers(task)
        tasks.append(
            {
                "name": task.name,
                "inputs": sorted(task.native_interface.inputs),
                "triggers": triggers,
                "trigger_errors": errors,
                **_task_runtime(task),
            }
        )
    declared: list[Any] = list(env.secrets or [])
    secrets: list[dict[str, Any]] = [
        {"key": s.key, "group": getattr(s, "group", None), "as_env_var": s.as_env_var}
        for s in declared
        if not isinstance(s, str)
    ]
    described: dict[str, Any] = {
        "name": env.name,
        "image": await _describe_image(env.image, root),
        "secrets": secrets,
        "env_vars": dict(sorted(dict[str, str](env.env_vars or {}).items())),
        "resources": repr(env.resources),
        "tasks": sorted(tasks, key=lambda t: t["name"]),
    }
    app = _describe_app(env)
    if app is not None:
        described["app"] = app
    return described


def _version(report: dict[str, Any]) -> str:
    """Hash of what a deploy registers: the bundled files and each env's spec."""
    payload = {
        "bundle": report["bundle"]["files"],
        "envs": [
            {k: v for k, v in env.items() if k != "image"} | {"image": env["image"]["identity"]}
            for env in report["envs"]
        ],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def _bundle_members(args: list[str]) -> list[str]:
    if "--tgz" not in args:
        return []
    tgz = args[args.index("--tgz") + 1]
    with tarfile.open(tgz, "r:gz") as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


async def _dry_run(envs: list[Any], version: str) -> dict[str, Any]:
    import flyte
    from flyte._deploy import apply, plan_deploy
    from flyte._internal.image_cache import ImageCache

    lookup = {e.name: e.image.uri if isinstance(e.image, flyte.Image) else e.image for e in envs}
    tasks: list[dict[str, Any]] = []
    apps: list[dict[str, Any]] = []
    members: set[str] = set()
    for plan in plan_deploy(*envs, version=version):
        deployment = await apply(
            plan,
            copy_style="loaded_modules",
            dryrun=True,
            image_cache=ImageCache(image_lookup=lookup),
        )
        for deployed in deployment.envs.values():
            for entity in getattr(deployed, "deployed_entities", []):
                spec = entity.deployed_task
                container = spec.task_template.container
                tasks.append(
                    {
                        "name": spec.task_template.id.name,
                        "version": spec.task_template.id.version,
                        "image": container.image,
                        "args": [a for a in container.args if not a.endswith(".tar.gz")],
                        "env": {kv.key: kv.value for kv in container.env},
                    }
                )
                members.update(_bundle_members(list(container.args)))
            app = getattr(deployed, "deployed_app", None)
            if app is not None:  # an AppEnvironment: its serialized app spec
                container = app.pb2.spec.container
                command = list(container.command)
                apps.append(
                    {
                        "name": deployed.get_name(),
                        "image": container.image,
                        "command": [a for a in command if not a.endswith(".tar.gz")],
                        "env": {kv.key: kv.value for kv in container.env},
                        "ports": [p.container_port for p in container.ports],
                    }
                )
                members.update(_bundle_members(command))
    return {
        "tasks": sorted(tasks, key=lambda t: t["name"]),
        "apps": apps,
        "bundle_members": sorted(members),
    }


def _deploy(envs: list[Any], version: str) -> dict[str, Any]:
    import flyte

    deployments = flyte.deploy(*envs, version=version, copy_style="loaded_modules")
    tasks: list[dict[str, Any]] = []
    apps: list[dict[str, Any]] = []
    for deployment in deployments:
        for deployed in deployment.envs.values():
            app = getattr(deployed, "deployed_app", None)
            if app is not None:
                apps.append({"name": app.name, "revision": str(app.revision), "url": app.endpoint})
            for entity in getattr(deployed, "deployed_entities", []):
                template = entity.deployed_task.task_template
                triggers = [t.name for t in entity.deployed_triggers]
                tasks.append(
                    {"name": template.id.name, "version": template.id.version, "triggers": triggers}
                )
    return {"tasks": tasks, "apps": apps}


async def _describe(args: dict[str, Any], root: pathlib.Path) -> tuple[dict[str, Any], list[Any]]:
    from flyte._environment import list_loaded_environments

    agent_src = pathlib.Path(args["src_dirs"][0])
    load_errors = _load(agent_src)
    envs = list(list_loaded_environments())
    files, digest = _bundle_files(root)
    report: dict[str, Any] = {
        "agent": args["agent"],
        "load_errors": load_errors,
        "modules": _user_module_files(root),
        "bundle": {"files": files, "digest": digest},
        "envs": [await _describe_env(e, root) for e in envs],
    }
    report["version"] = _version(report)
    return report, envs


def main(argv: list[str]) -> int:
    args = json.loads(argv[1])
    root = pathlib.Path(args["root"]).resolve()
    os.chdir(root)
    _isolate_sys_path(
        root,
        [pathlib.Path(d).resolve() for d in args["src_dirs"]],
        [pathlib.Path(d) for d in args.get("hide", [])],
    )

    import flyte

    flyte.init_from_config(args["config"], root_dir=root)
    report, envs = asyncio.run(_describe(args, root))
    try:
        if args["mode"] == "dry-run":
            report["dry_run"] = asyncio.run(_dry_run(envs, report["version"]))
        elif args["mode"] == "deploy":
            if args.get("version") and args["version"] != report["version"]:
                raise RuntimeError(
                    f"code changed since validation: {args['version']} -> {report['version']}"
                )
            report["deployed"] = _deploy(envs, report["version"])
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
    pathlib.Path(args["report"]).write_text(
        json.dumps(report, indent=1, sort_keys=True), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
