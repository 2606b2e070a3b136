"""Backends as pure values: bubblewrap and docker command lines, the Flyte task, binds, choice.

These run everywhere (no bubblewrap, Docker or cluster needed); `test_sandbox_containment`
runs the bubblewrap sandbox for real.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_loop_common.sandbox import (
    BackendCheck,
    BwrapLayout,
    DisabledSandbox,
    DockerSpec,
    FlyteSandbox,
    PlainSubprocessSandbox,
    ProtectedPaths,
    SandboxLimits,
    SandboxUnavailable,
    _select,
    build_container_task,
    bwrap_argv,
    check_backends,
    docker_argv,
    flyte_task_spec,
    limits_from_settings,
    open_sandbox,
    selected_backend,
    write_tree,
)
from agent_loop_common.sandbox._bwrap import BwrapSandbox
from agent_loop_common.sandbox._bwrap_argv import outer_argv
from agent_loop_common.sandbox._docker import DockerSandbox, client_env
from agent_loop_common.sandbox._flyte import RUNNER_SCRIPT
from agent_loop_common.sandbox._paths import plan_binds, program_binds
from agent_loop_common.settings import Settings

LIMITS = SandboxLimits(wall_seconds=30, memory_mb=512, max_processes=64, max_file_mb=8)


def _layout(tmp_path: Path) -> BwrapLayout:
    return BwrapLayout(
        bwrap="/usr/bin/bwrap",
        prlimit="/usr/bin/prlimit",
        repo=tmp_path / "repo",
        home=tmp_path / "home",
        tmp=tmp_path / "tmp",
        out=tmp_path / "out",
        shm=tmp_path / "shm",
        etc={"passwd": tmp_path / "etc/passwd", "hosts": tmp_path / "etc/hosts"},
        readonly=[(Path("/opt/py"), Path("/opt/py"))],
        system={"/usr": None, "/bin": "usr/bin"},
        etc_passthrough=["/etc/ssl"],
        limits=LIMITS,
        path="/usr/bin:/bin",
    )


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_bwrap_command_line(tmp_path: Path) -> None:
    argv = bwrap_argv(_layout(tmp_path), ["python", "-m", "pytest"], network=False)
    separator = argv.index("--")
    options, command = argv[:separator], argv[separator + 1 :]
    for flag in (
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ):
        assert flag in options, flag
    assert options[options.index("--cap-drop") + 1] == "ALL"
    assert options[options.index("--uid") + 1] == "1000"
    assert dict(_pairs(options, "--setenv")) == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/sandbox/home",
        "LANG": "C.UTF-8",
        "SANDBOX_JUNIT": "/sandbox/out/junit.xml",
    }
    assert _pairs(options, "--ro-bind") == [
        ("/usr", "/usr"),
        (str(tmp_path / "etc/passwd"), "/etc/passwd"),
        (str(tmp_path / "etc/hosts"), "/etc/hosts"),
        ("/opt/py", "/opt/py"),
    ]
    assert _pairs(options, "--symlink") == [("usr/bin", "/bin")]
    assert _pairs(options, "--bind") == [
        (str(tmp_path / "tmp"), "/tmp"),
        (str(tmp_path / "repo"), "/sandbox/repo"),
        (str(tmp_path / "home"), "/sandbox/home"),
        (str(tmp_path / "out"), "/sandbox/out"),
        (str(tmp_path / "shm"), "/dev/shm"),
    ]
    remounts = [options[i + 1] for i, a in enumerate(options) if a == "--remount-ro"]
    assert remounts == ["/dev", "/"]  # after every mount: no writable tmpfs is left
    assert options.index("--remount-ro") > max(i for i, a in enumerate(options) if a == "--bind")
    assert options[options.index("--chdir") + 1] == "/sandbox/repo"
    assert command == [
        "/usr/bin/prlimit",
        f"--as={512 * 2**20}",
        "--cpu=31",
        f"--fsize={8 * 2**20}",
        "--core=0",
        "--nproc=64",
        "--",
        "python",
        "-m",
        "pytest",
    ]


def test_bwrap_with_the_network_for_setup(tmp_path: Path) -> None:
    """bubblewrap keeps the setup network's namespace; the host's resolver files stay out."""
    argv = bwrap_argv(_layout(tmp_path), ["uv", "sync"], network=True)
    assert "--unshare-net" not in argv
    assert ("/etc/gai.conf", "/etc/gai.conf") in _pairs(argv, "--ro-bind-try")
    assert ("/etc/resolv.conf", "/etc/resolv.conf") not in _pairs(argv, "--ro-bind-try")
    assert ("/etc/hosts", "/etc/hosts") not in _pairs(argv, "--ro-bind-try")
    assert (str(tmp_path / "etc/hosts"), "/etc/hosts") in _pairs(argv, "--ro-bind")


def test_the_setup_network_script_and_routes() -> None:
    """The fixed script takes everything variable as arguments; routes drop the host's."""
    from agent_loop_common.sandbox._setup_net import (
        BLOCKED_RANGES,
        SETUP_NET_SCRIPT,
        SetupNetwork,
        route_batch,
    )

    batch = route_batch(["192.0.2.2", "198.18.0.100", "not-an-address", "::1"], ipv6=False)
    assert "route add blackhole 169.254.0.0/16\n" in batch
    assert "route add blackhole 127.0.0.0/8\n" in batch
    assert "route add blackhole 192.0.2.2/32\n" in batch
    assert "198.18.0.100" not in batch  # the namespace's own network
    assert batch.count("\n") == len(BLOCKED_RANGES) + 1
    net = SetupNetwork("/usr/bin/unshare", "/usr/bin/slirp4netns", "/usr/sbin/ip", as_root=True)
    prefix = net.prefix(Path("/w/etc/routes"))
    assert prefix == [
        "/usr/bin/unshare",
        "--net",
        "--",
        "/bin/sh",
        "-c",
        SETUP_NET_SCRIPT,
        "sh",
        "/usr/sbin/ip",
        "/w/etc/routes",
    ]
    slirp = net.slirp_argv(42, 7)
    assert "--disable-host-loopback" in slirp
    assert slirp[-2:] == ["42", "tap0"]
    user = SetupNetwork("/u", "/s", "/i", as_root=False)
    assert user.prefix(Path("/b"))[1:4] == ["--user", "--map-root-user", "--net"]
    assert "--userns-path=/proc/42/ns/user" in user.slirp_argv(42, 7)
    assert "not installed" not in (SetupNetwork("/u", "/nope", "/i", True).missing() or "")
    assert "slirp4netns" in (SetupNetwork("/u", "/nope", "/i", True).missing() or "")


def test_from_root_the_sandbox_starts_as_an_unprivileged_uid() -> None:
    assert outer_argv("/usr/bin/bwrap", "/usr/bin/setpriv", [], 65534, 65534) == [
        "/usr/bin/setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
    ]
    staged = outer_argv(
        "/usr/bin/bwrap", "/usr/bin/setpriv", [(Path("/root/.pyenv/v"), Path("/w/stage/0"))], 9, 9
    )
    assert staged[:5] == ["/usr/bin/bwrap", "--dev-bind", "/", "/", "--die-with-parent"]
    assert _pairs(staged, "--ro-bind") == [("/root/.pyenv/v", "/w/stage/0")]
    assert staged[staged.index("--") + 1 :][:1] == ["/usr/bin/setpriv"]


def test_docker_command_line(tmp_path: Path) -> None:
    spec = DockerSpec(
        docker="docker",
        image="python:3.12-slim",
        name="agent-loop-sandbox-abc",
        repo=tmp_path / "repo",
        home=tmp_path / "home",
        out=tmp_path / "out",
        uid=65534,
        gid=65534,
        limits=LIMITS,
    )
    argv = docker_argv(spec, ["python", "-m", "pytest", "-q"], network=False)
    image_at = argv.index("python:3.12-slim")
    options = argv[:image_at]
    assert argv[:3] == ["docker", "run", "--rm"]
    assert argv[image_at + 1 :] == ["-m", "pytest", "-q"]

    def value(flag: str) -> list[str]:
        return [options[i + 1] for i, a in enumerate(options) if a == flag]

    assert value("--entrypoint") == ["python"]
    assert value("--network") == ["none"]
    assert value("--cap-drop") == ["ALL"]
    assert value("--security-opt") == ["no-new-privileges"]
    assert value("--user") == ["65534:65534"]
    assert value("--pids-limit") == ["64"]
    assert value("--memory") == value("--memory-swap") == ["512m"]
    assert value("--ulimit") == [f"fsize={8 * 2**20}:{8 * 2**20}", "cpu=31:31", "core=0:0"]
    assert "--read-only" in options
    assert "--init" in options
    assert value("--name") == ["agent-loop-sandbox-abc"]
    assert value("--mount") == [
        f"type=bind,source={tmp_path / 'repo'},target=/sandbox/repo",
        f"type=bind,source={tmp_path / 'home'},target=/sandbox/home",
        f"type=bind,source={tmp_path / 'out'},target=/sandbox/out",
    ]
    assert value("--workdir") == ["/sandbox/repo"]
    assert value("--env") == [
        "HOME=/sandbox/home",
        "LANG=C.UTF-8",
        "SANDBOX_JUNIT=/sandbox/out/junit.xml",
    ]
    assert (
        docker_argv(spec, ["uv", "sync"], network=True)[
            docker_argv(spec, ["uv", "sync"], network=True).index("--network") + 1
        ]
        == "bridge"
    )


def test_the_docker_client_gets_no_secret() -> None:
    env = client_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/root",
            "DOCKER_HOST": "unix:///run/docker.sock",
            "GITHUB_TOKEN": "ghp_secret",
            "ANTHROPIC_API_KEY": "sk-secret",
        }
    )
    assert env == {"PATH": "/usr/bin", "HOME": "/root", "DOCKER_HOST": "unix:///run/docker.sock"}


async def test_docker_runs_for_real_only_where_an_engine_answers(tmp_path: Path) -> None:
    docker = DockerSandbox(
        LIMITS, image=os.environ.get("AGENT_LOOP_SANDBOX_IMAGE", "python:3.11-slim")
    )
    works, why = await docker.probe()
    if not works:
        pytest.skip(f"no Docker engine here ({why}); the command line is tested above")
    tree = write_tree({"t.py": "import os; print(os.environ.get('GITHUB_TOKEN'))"}, tmp_path / "t")
    result = await docker.run(tree, ["python", "t.py"])
    assert result.ok
    assert "None" in result.output.text


def test_the_flyte_task_spec_holds_no_secret() -> None:
    spec = flyte_task_spec(image="ghcr.io/acme/tests:1", limits=LIMITS)
    assert spec.secrets == ()
    assert spec.image == "ghcr.io/acme/tests:1"
    assert spec.env_vars == {
        "HOME": "/tmp/home",
        "LANG": "C.UTF-8",
        "SANDBOX_JUNIT": "/var/outputs/junit",
    }
    assert (spec.cpu, spec.memory, spec.timeout_seconds) == (1, "512Mi", 630)
    assert spec.command[:2] == ("/bin/sh", "-c")
    assert spec.arguments == ("/var/inputs/repo", "{{.inputs.argv}}", "{{.inputs.limit}}")


def test_the_flyte_container_task_builds_offline() -> None:
    task = build_container_task(flyte_task_spec(image="ghcr.io/acme/tests:1", limits=LIMITS))
    assert type(task).__name__ == "ContainerTask"
    assert task.name == "agent-loop-run-tests"
    assert not task.secrets
    assert set(task.interface.inputs) == {"repo", "argv", "limit"}
    assert set(task.interface.outputs) == {"exit_code", "output", "junit"}


def test_the_flyte_runner_script_rebuilds_the_argv_exactly(tmp_path: Path) -> None:
    """The task's script, run by a local /bin/sh: quoting round-trips, nothing expands."""
    import shlex

    tree = write_tree({"a.txt": "A"}, tmp_path / "inputs" / "repo")
    out = tmp_path / "outputs"
    out.mkdir()
    argv = ["python3", "-c", "import sys; print(sys.argv[1:])", "$HOME", "`id`", "it's", "a b"]
    subprocess.run(
        ["/bin/sh", "-c", RUNNER_SCRIPT, "agent-loop-tests", str(tree), shlex.join(argv), "10"],
        env={
            "PATH": "/usr/bin:/bin",
            "SANDBOX_OUTPUTS": str(out),
            "SANDBOX_WORK": str(tmp_path / "w"),
        },
        check=True,
    )
    assert (out / "exit_code").read_text().strip() == "0"
    assert (out / "output").read_text().strip() == str(["$HOME", "`id`", "it's", "a b"])
    assert (out / "junit").read_text() == ""
    assert (tmp_path / "w" / "repo" / "a.txt").read_text() == "A"


async def test_the_flyte_backend_refuses_outside_a_cluster(tmp_path: Path) -> None:
    sandbox = FlyteSandbox(LIMITS, task=object())
    with pytest.raises(SandboxUnavailable, match="cluster"):
        await sandbox.run(write_tree({"a": "b"}, tmp_path / "t"), ["true"])


# ---------------------------------------------------------------- binds


def _protected(tmp_path: Path) -> ProtectedPaths:
    return ProtectedPaths(
        homes=(Path("/root"), Path("/home/alice")),
        agent_home=tmp_path / "state",
        key_files=(tmp_path / "keys" / "app.pem",),
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/", "system folder"),
        ("/etc", "system folder"),
        ("/tmp", "system folder"),
        ("/proc/1", "kernel"),
        ("/root", "home folder"),
        ("/home", "home folder"),
        ("/home/alice/.ssh", "credentials"),
        ("/home/alice/.config/gh", "credentials"),
        ("/home/alice/.local", "can hold credentials"),
    ],
)
def test_protected_paths_are_never_bound(tmp_path: Path, path: str, reason: str) -> None:
    refusal = _protected(tmp_path).refusal(Path(path))
    assert refusal is not None
    assert reason in refusal


def test_the_state_folder_and_key_files_are_never_bound(tmp_path: Path) -> None:
    protected = _protected(tmp_path)
    for path in (tmp_path, tmp_path / "state", tmp_path / "state" / "x", tmp_path / "keys"):
        assert protected.refusal(path) is not None, path
    assert protected.refusal(tmp_path / "keys" / "app.pem") is not None
    assert protected.refusal(tmp_path / "other") is None
    assert protected.refusal(Path("/root/.pyenv/versions/3.11.7")) is None
    assert protected.refusal(Path("/home/alice/.local/share/uv/python/cpython-3.12")) is None


def test_trees_that_may_not_be_copied(tmp_path: Path) -> None:
    protected = _protected(tmp_path)
    assert protected.tree_refusal(tmp_path) is None  # holds the state folder: left out
    assert protected.in_tree(tmp_path) == [tmp_path / "state", tmp_path / "keys" / "app.pem"]
    assert "home folder" in (protected.tree_refusal(Path("/root")) or "")
    assert "system folder" in (protected.tree_refusal(Path("/")) or "")
    assert "state folder" in (protected.tree_refusal(tmp_path / "state" / "x") or "")


def test_this_machines_protected_paths_include_home_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_APP_PRIVATE_KEY_PATH", str(tmp_path / "k.pem"))
    protected = ProtectedPaths.current(agent_home=".agent-loop")
    assert Path.home() in protected.homes
    assert tmp_path / "k.pem" in protected.key_files
    assert protected.agent_home == Path.cwd() / ".agent-loop"


def test_a_venv_python_binds_the_venv_and_its_installation() -> None:
    venv = Path(sys.prefix)
    binds = program_binds(str(venv / "bin" / "python"))
    assert binds[0] == venv
    real = Path(os.path.realpath(venv / "bin" / "python"))
    installation = real.parent.parent
    if not str(installation).startswith("/usr"):
        assert installation in binds
    assert Path.home() not in binds


def test_programs_in_system_folders_or_relative_need_no_bind() -> None:
    assert program_binds("/usr/bin/python3") == []
    assert program_binds("python3") == []
    assert program_binds("/nonexistent/bin/tool") == []


def test_a_pyvenv_cfg_never_chooses_a_bind(tmp_path: Path) -> None:
    """`home =` is text anyone can write: only where the host's links lead counts."""
    outside = tmp_path / "secret" / "bin"
    outside.mkdir(parents=True)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {outside}\n")
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    assert program_binds(str(venv / "bin" / "python")) == [venv]


def test_a_program_inside_the_tree_binds_nothing(tmp_path: Path) -> None:
    tool = tmp_path / "opt" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    link = tmp_path / "tree" / "bin" / "tool"
    link.parent.mkdir(parents=True)
    link.symlink_to(tool)
    binds, notes = plan_binds([str(link)], [], _protected(tmp_path), trees=[tmp_path / "tree"])
    assert binds == []
    assert any("inside the repository" in n for n in notes)
    binds, _ = plan_binds([str(tool)], [], _protected(tmp_path), trees=[tmp_path / "tree"])
    assert binds == [tmp_path / "opt"]


def test_programs_under_system_folders_have_no_note() -> None:
    assert plan_binds(["/bin/true", "/usr/bin/env"], [], ProtectedPaths()) == ([], [])


def test_plan_binds_refuses_and_notes(tmp_path: Path) -> None:
    protected = _protected(tmp_path)
    (tmp_path / "opt" / "tool").mkdir(parents=True)
    (tmp_path / "state").mkdir()
    binds, notes = plan_binds(
        ["python3"],
        [
            "/root",
            str(tmp_path / "state"),
            str(tmp_path / "opt"),
            str(tmp_path / "opt" / "tool"),
            "/nope",
        ],
        protected,
    )
    assert binds == [tmp_path / "opt"]  # the nested one is covered by its parent
    assert any("home folder /root" in n for n in notes)
    assert any("state folder" in n for n in notes)
    assert any("/nope does not exist" in n for n in notes)


# ---------------------------------------------------------------- choosing a backend


def _settings(**values: object) -> Settings:
    return Settings(repo="octo/hello", github_token="x", **values)  # type: ignore[arg-type]


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, tuple[bool, str]]]:
    """Fake probe results per backend (the real ones run in the containment tests)."""
    _select.clear_probe_cache()
    answers = {"bwrap": (False, "bubblewrap is not installed"), "docker": (False, "no engine")}

    async def bwrap_probe(self: BwrapSandbox) -> tuple[bool, str]:
        return answers["bwrap"]

    async def docker_probe(self: DockerSandbox) -> tuple[bool, str]:
        return answers["docker"]

    monkeypatch.setattr(BwrapSandbox, "probe", bwrap_probe)
    monkeypatch.setattr(DockerSandbox, "probe", docker_probe)
    yield answers
    _select.clear_probe_cache()


async def test_off_runs_nothing_and_says_so(tmp_path: Path) -> None:
    sandbox = await open_sandbox(_settings(sandbox="off"))
    assert isinstance(sandbox, DisabledSandbox)
    assert not sandbox.enabled
    result = await sandbox.run(tmp_path, ["pytest"])
    assert not result.ran
    assert result.backend == "off"
    assert "AGENT_LOOP_SANDBOX=off" in result.error


async def test_auto_prefers_bwrap_then_docker(probes: dict[str, tuple[bool, str]]) -> None:
    probes["bwrap"] = (True, "ok")
    probes["docker"] = (True, "ok")
    assert isinstance(await open_sandbox(_settings()), BwrapSandbox)
    _select.clear_probe_cache()
    probes["bwrap"] = (False, "not installed")
    sandbox = await open_sandbox(_settings(sandbox_image="node:22"))
    assert isinstance(sandbox, DockerSandbox)
    assert sandbox.image == "node:22"


async def test_auto_refuses_clearly_when_nothing_works(probes: dict[str, tuple[bool, str]]) -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        await open_sandbox(_settings())
    message = str(caught.value)
    for hint in (
        "bwrap: bubblewrap is not installed",
        "docker: no engine",
        "apt-get install -y bubblewrap",
        "AGENT_LOOP_SANDBOX=docker",
        "AGENT_LOOP_SANDBOX=off",
    ):
        assert hint in message


async def test_the_plain_subprocess_only_on_request(probes: dict[str, tuple[bool, str]]) -> None:
    sandbox = await open_sandbox(_settings(), allow_unisolated=True)
    assert isinstance(sandbox, PlainSubprocessSandbox)
    assert sandbox.name == "plain-subprocess (not isolated)"
    assert not sandbox.isolated


async def test_an_explicit_backend_that_cannot_run_is_refused(
    probes: dict[str, tuple[bool, str]],
) -> None:
    probes["docker"] = (True, "ok")
    with pytest.raises(SandboxUnavailable, match="AGENT_LOOP_SANDBOX=bwrap cannot run here"):
        await open_sandbox(_settings(sandbox="bwrap"))
    probes["docker"] = (False, "no engine")
    with pytest.raises(SandboxUnavailable, match="AGENT_LOOP_SANDBOX=docker cannot run here"):
        await open_sandbox(_settings(sandbox="docker"), allow_unisolated=True)
    with pytest.raises(SandboxUnavailable, match="only inside a deployed agent"):
        await open_sandbox(_settings(sandbox="flyte"))


async def test_probes_are_cached(probes: dict[str, tuple[bool, str]]) -> None:
    probes["bwrap"] = (True, "ok")
    await open_sandbox(_settings())
    probes["bwrap"] = (False, "changed")
    assert isinstance(await open_sandbox(_settings()), BwrapSandbox)  # cached answer
    checks = await check_backends(_settings())  # refreshes
    assert checks[0] == BackendCheck(backend="bwrap", works=False, reason="changed")


async def test_check_backends_reports_every_backend(probes: dict[str, tuple[bool, str]]) -> None:
    checks = await check_backends(_settings())
    assert [c.backend for c in checks] == [
        "bwrap",
        "docker",
        "flyte",
        "plain-subprocess (not isolated)",
        "off",
    ]
    assert [c.works for c in checks] == [False, False, False, True, True]
    assert selected_backend(checks, "auto") is None
    assert selected_backend(checks, "off") == "off"
    probes["docker"] = (True, "ok")
    assert selected_backend(await check_backends(_settings()), "auto") == "docker"


def test_settings_make_the_limits_and_protected_paths(tmp_path: Path) -> None:
    (tmp_path / "k.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    settings = _settings(
        sandbox_timeout_seconds=30,
        sandbox_memory_mb=512,
        sandbox_max_processes=64,
        sandbox_max_file_mb=8,
        github_app_id="1",
        github_app_private_key_path=tmp_path / "k.pem",
        home=tmp_path / "state",
    )
    assert limits_from_settings(settings) == LIMITS
    protected = _select.protected_from_settings(settings)
    assert tmp_path / "k.pem" in protected.key_files
    assert protected.agent_home == tmp_path / "state"
