"""Run a repository's own tests on a private copy of its tree, with no secret in reach.

Issue 14: every pull request and fix push is checked by the repository's tests, run
where they cannot read the agent's token or key, reach the network, or write outside
their copy. `docs/sandbox.md` has the threat model per backend.

```python
sandbox = await open_sandbox(settings)          # SandboxUnavailable: show it, exit 2
plan = plan_tests(settings, base_files)         # plan.command None: no tests (plan.note)
command, setup = plan.command, plan.setup       # pytest gets the JUnit report and the guard

base = await cache.get_or_run(
    baseline_key(base_sha, command.argv, setup),
    lambda: sandbox.run(base_tree, command.argv, setup=setup),
)
after = await sandbox.run(base_tree, command.argv, setup=setup, changes=staged_files)
verdict = compare(base, after)                  # passed / failed / tampered / no_evidence / not_run
flags = flag_test_tampering(staged_files, base_contents) + scan_test_machinery(
    staged_files, base_contents
)                                               # test_machinery flags: `tampered`
```

`plan_tests` is the one place that decides what runs (the ticks' checks and `agent-loop
sandbox run --dir` both ask it), so a pytest command always carries the JUnit report and
the pytest guard. A tree comes from a tarball (`extract_tarball`, GitHub's top folder
stripped) or from files (`write_tree`); `run` never modifies it. Results are typed and
small (`RunResult`: exit code, timing, limits hit, a bounded head and tail of the
output, test counts and failing names from pytest's summary or a JUnit report, what the
pytest guard found).
"""

from agent_loop_common.sandbox._base import OFF_BACKEND, DisabledSandbox, Sandbox
from agent_loop_common.sandbox._bwrap import BWRAP_BACKEND, BwrapSandbox
from agent_loop_common.sandbox._bwrap_argv import BwrapLayout, bwrap_argv
from agent_loop_common.sandbox._cache import (
    BaselineCache,
    BaselineKey,
    BaselineStore,
    baseline_key,
)
from agent_loop_common.sandbox._command import (
    JUNIT_PLACEHOLDER,
    parse_command,
    validate_extra_args,
)
from agent_loop_common.sandbox._detect import (
    CommandSource,
    TestCommand,
    detect_test_command,
    resolve_test_command,
    runs_pytest,
    with_junit_report,
    with_pytest_guard,
)
from agent_loop_common.sandbox._docker import (
    DOCKER_BACKEND,
    DockerSandbox,
    DockerSpec,
    docker_argv,
)
from agent_loop_common.sandbox._errors import (
    CommandRejected,
    SandboxError,
    SandboxUnavailable,
    TreeError,
)
from agent_loop_common.sandbox._flyte import (
    FLYTE_BACKEND,
    FlyteSandbox,
    FlyteTestSpec,
    build_container_task,
    flyte_task_spec,
    in_flyte_cluster,
)
from agent_loop_common.sandbox._guard import GUARD_PLACEHOLDER, without_guard
from agent_loop_common.sandbox._limits import SandboxLimits
from agent_loop_common.sandbox._machinery import scan_test_machinery
from agent_loop_common.sandbox._paths import ProtectedPaths
from agent_loop_common.sandbox._plain import PLAIN_BACKEND, PlainSubprocessSandbox
from agent_loop_common.sandbox._plan import NO_TEST_COMMAND, TestPlan, plan_tests
from agent_loop_common.sandbox._pysetup import (
    ENVS_FOLDER,
    VENV_DIR,
    DefaultSetup,
    EnvReuse,
    agents_md_setup_command,
    default_python_setup,
    dependency_digest,
    env_reuse,
    folder_dependency_digest,
)
from agent_loop_common.sandbox._reports import name_key
from agent_loop_common.sandbox._result import (
    GuardFinding,
    LimitName,
    OutputExcerpt,
    RunResult,
    TestCounts,
    TestOutcome,
)
from agent_loop_common.sandbox._select import (
    BackendCheck,
    SandboxChoice,
    cgroup_required,
    check_backends,
    limits_from_settings,
    open_sandbox,
    sandbox_facts,
    selected_backend,
)
from agent_loop_common.sandbox._tamper import (
    PYTEST_CONFIG_FILES,
    TamperFlag,
    TamperKind,
    flag_test_tampering,
    is_test_file,
)
from agent_loop_common.sandbox._tree import apply_changes, extract_tarball, write_tree
from agent_loop_common.sandbox._verdict import TestVerdict, VerdictStatus, compare

__all__ = [
    "BWRAP_BACKEND",
    "DOCKER_BACKEND",
    "ENVS_FOLDER",
    "FLYTE_BACKEND",
    "GUARD_PLACEHOLDER",
    "JUNIT_PLACEHOLDER",
    "NO_TEST_COMMAND",
    "OFF_BACKEND",
    "PLAIN_BACKEND",
    "PYTEST_CONFIG_FILES",
    "VENV_DIR",
    "BackendCheck",
    "BaselineCache",
    "BaselineKey",
    "BaselineStore",
    "BwrapLayout",
    "BwrapSandbox",
    "CommandRejected",
    "CommandSource",
    "DefaultSetup",
    "DisabledSandbox",
    "DockerSandbox",
    "DockerSpec",
    "EnvReuse",
    "FlyteSandbox",
    "FlyteTestSpec",
    "GuardFinding",
    "LimitName",
    "OutputExcerpt",
    "PlainSubprocessSandbox",
    "ProtectedPaths",
    "RunResult",
    "Sandbox",
    "SandboxChoice",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "TamperFlag",
    "TamperKind",
    "TestCommand",
    "TestCounts",
    "TestOutcome",
    "TestPlan",
    "TestVerdict",
    "TreeError",
    "VerdictStatus",
    "agents_md_setup_command",
    "apply_changes",
    "baseline_key",
    "build_container_task",
    "bwrap_argv",
    "cgroup_required",
    "check_backends",
    "compare",
    "default_python_setup",
    "dependency_digest",
    "detect_test_command",
    "docker_argv",
    "env_reuse",
    "extract_tarball",
    "flag_test_tampering",
    "flyte_task_spec",
    "folder_dependency_digest",
    "in_flyte_cluster",
    "is_test_file",
    "limits_from_settings",
    "name_key",
    "open_sandbox",
    "parse_command",
    "plan_tests",
    "resolve_test_command",
    "runs_pytest",
    "sandbox_facts",
    "scan_test_machinery",
    "selected_backend",
    "validate_extra_args",
    "with_junit_report",
    "with_pytest_guard",
    "without_guard",
    "write_tree",
]
