"""A mutation campaign over the fixture corpus (shared by the CI test and `python -m tests.fuzz`)."""

from __future__ import annotations

import gc
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.harness import materialise, preload, run_cli, why_argv
from tests.fuzz.mutate import OPERATORS, mutate
from tests.fuzz.seeds import Seed, load_seeds


@dataclass
class CampaignResult:
    tried: int = 0
    exit_codes: list[int | None] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0
    kinds: set[str] = field(default_factory=set)
    """the operators applied and the containers used, over the whole run"""


def campaign(rng: random.Random, count: int, timeout: float = 20.0, save: Path | None = None,
             progress: Callable[[int], None] | None = None, per_kind: bool = False) -> CampaignResult:
    """Mutate random seeds ``count`` times and run `why` on each; collect every contract violation.

    ``per_kind``: input i starts with operator i mod (number of operators), so even a short run (CI) spends
    the same budget on every mutation kind instead of leaving the rare ones (alias bombs) to chance.
    """
    seeds = load_seeds()
    warm = min(seeds, key=lambda s: sum(len(b) for b in s.files.values()))
    preload(warm.files, warm.target, warm.namespace)
    result = CampaignResult()
    try:
        _run(rng, seeds, count, timeout, save, progress, result, per_kind)
    except KeyboardInterrupt:  # SIGINT/SIGTERM by hand: report what was tried so far
        pass
    finally:
        gc.unfreeze()  # inside pytest the heap goes on living: let its cycles be collected again
    return result


def _run(rng: random.Random, seeds: list[Seed], count: int, timeout: float, save: Path | None,
         progress: Callable[[int], None] | None, result: CampaignResult, per_kind: bool = False) -> None:
    for i in range(count):
        seed = rng.choice(seeds)
        m = mutate(rng, seed.files, OPERATORS[i % len(OPERATORS)][0] if per_kind else None)
        result.kinds.update(m.ops)
        result.kinds.add(f"container:{m.container}")
        output = rng.choice(("json", "json", "json", "terminal", "markdown"))
        with tempfile.TemporaryDirectory(prefix="kdfuzz-") as tmp:
            path = materialise(m, Path(tmp))
            outcome = run_cli(why_argv(path, seed.target, seed.namespace, output), timeout=timeout)
            result.tried += 1
            result.exit_codes.append(outcome.code)
            result.slowest = max(result.slowest, outcome.seconds)
            problem = outcome.problem(output)
            if problem is not None:
                result.failures.append(f"#{i} {seed.name} [{m.container}] {'; '.join(m.what)[:300]} -> {problem}")
                if progress is not None:
                    progress(-1)
                if save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    m.container = "tar.gz"
                    saved = materialise(m, Path(tmp))
                    (save / f"crash-{i}.tar.gz").write_bytes(saved.read_bytes())
                    (save / f"crash-{i}.txt").write_text(
                        f"{seed.target} {seed.namespace or ''}\n{'; '.join(m.what)}\n{problem}\n")
        if progress is not None and (i + 1) % 100 == 0:
            progress(i + 1)
