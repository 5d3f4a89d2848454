"""Options shared by `why`, `demo` and `snapshot`, spelled as kubectl spells them (`-n`, `-A`, `--context`,
`--kubeconfig`, `--as`, `--as-group`).

Every option defaults to None so a value from the config file or a ``KUEUEDIAG_*`` variable is not overridden
by a flag the user did not give; the defaults live in :class:`kueuediag.config.Settings`. Typer reads these
objects as function defaults, so one definition serves every command that takes the option.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

import typer

from kueuediag.cli.complete import complete_namespace, complete_target


class OutputFormat(str, Enum):
    """`-o`: typed as a choice so the help, the error for a typo and shell completion list the formats."""

    terminal = "terminal"
    json = "json"
    markdown = "markdown"
    junit = "junit"


TARGET = typer.Argument(
    None,
    metavar="TARGET",
    autocompletion=complete_target,
    show_default=False,
    help="job/NAME, jobset/NAME, pod/NAME, workload/NAME, KIND.GROUP/NAME or NAME. With --from, may be omitted "
    "when the snapshot recorded one (`kueuediag snapshot --for TARGET`).",
)
NAMESPACE = typer.Option(
    None,
    "-n",
    "--namespace",
    metavar="NAMESPACE",
    autocompletion=complete_namespace,
    help="Namespace of the target (default: the kubeconfig context's namespace; with --from: "
    "the recorded target's, else searched).",
)
OUTPUT = typer.Option(None, "-o", "--output", case_sensitive=False, help="Output format.")
QUIET = typer.Option(None, "-q", "--quiet", help="Print only the one-line verdict (scripts, chat bots).")
VERBOSE = typer.Option(None, "-v", "--verbose", help="Everything: all findings and evidence, timings.")
NO_COLOR = typer.Option(
    None,
    "--no-color",
    help="Plain text: no colours, no box drawing (NO_COLOR and TERM=dumb do the same; so does a pipe).",
)
WIDTH = typer.Option(
    None, "--width", metavar="COLUMNS", min=20, help="Render for this many columns (default: the terminal's)."
)
KUBECONFIG = typer.Option(
    None, "--kubeconfig", metavar="FILE", help="kubeconfig path (default: KUBECONFIG, ~/.kube/config, in-cluster)."
)
CONTEXT = typer.Option(None, "--context", metavar="NAME", help="kubeconfig context.")
AS_USER = typer.Option(None, "--as", metavar="USER", help="Impersonate this user (as kubectl --as).")
AS_GROUP = typer.Option(
    None, "--as-group", metavar="GROUP", help="Impersonate this group (repeatable, as kubectl --as-group)."
)
KUEUE_NAMESPACE = typer.Option(
    None, "--kueue-namespace", metavar="NAMESPACE", help="Kueue's namespace (default kueue-system)."
)
TIMEOUT = typer.Option(None, "--timeout", metavar="SECONDS", min=0.1, help="Overall deadline in seconds (default 60).")
PROMETHEUS_URL = typer.Option(None, "--prometheus-url", metavar="URL", help="Prometheus base URL.")
PROMETHEUS_HEADER = typer.Option(
    None,
    "--prometheus-header",
    metavar="NAME=VALUE",
    help="NAME=VALUE header for Prometheus (repeatable). A bearer token can come from KUEUEDIAG_PROMETHEUS_TOKEN.",
)
PROMETHEUS_CA = typer.Option(None, "--prometheus-ca", metavar="FILE", help="CA bundle for Prometheus.")
PROMETHEUS_INSECURE = typer.Option(None, "--prometheus-insecure", help="Skip TLS verification for Prometheus.")
CONFIG = typer.Option(
    None, "--config", metavar="FILE", help="A .kueuediag.yaml or pyproject.toml (default: the nearest one)."
)


CLUSTER_FLAGS: dict[str, tuple[Any, Any]] = {
    "kubeconfig": (str | None, KUBECONFIG),
    "context": (str | None, CONTEXT),
    "as_user": (str | None, AS_USER),
    "as_group": (list[str] | None, AS_GROUP),
    "kueue_namespace": (str | None, KUEUE_NAMESPACE),
    "timeout": (float | None, TIMEOUT),
    "prometheus_url": (str | None, PROMETHEUS_URL),
    "prometheus_header": (list[str] | None, PROMETHEUS_HEADER),
    "prometheus_ca": (str | None, PROMETHEUS_CA),
    "prometheus_insecure": (bool | None, PROMETHEUS_INSECURE),
}
"""How a live command reaches the cluster and Prometheus: the same flags, spelled and documented once, for
`why`, `health` and `snapshot` (parameter name → (type, Typer option))."""

F = TypeVar("F", bound=Callable[..., Any])


def with_cluster_flags(fn: F) -> F:
    """Give a command the cluster flags (CLUSTER_FLAGS) after its own options; the command receives them as
    one keyword, ``cluster``: a dict of the values given (None when not), ready for
    ``settings_from_flags(config, **cluster, …)``.

    Typer reads a command's parameters from its signature, so the wrapper publishes the command's signature
    without ``cluster`` and with the ten flags appended (their types in ``__annotations__`` for Typer's
    type-hint lookup).
    """
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name != "cluster"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
             for name, (kind, option) in CLUSTER_FLAGS.items()]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cluster = {name: kwargs.pop(name, None) for name in CLUSTER_FLAGS}
        return fn(*args, cluster=cluster, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=own + added)  # type: ignore[attr-defined]
    annotations = {k: v for k, v in fn.__annotations__.items() if k != "cluster"}
    wrapper.__annotations__ = {**annotations, **{name: kind for name, (kind, _) in CLUSTER_FLAGS.items()}}
    return wrapper  # type: ignore[return-value]
