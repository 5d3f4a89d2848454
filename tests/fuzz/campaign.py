"""A mutation campaign over the fixture corpus (shared by the CI test and `python -m tests.fuzz`)."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.harness import materialise, preload, run_cli, why_argv
from tests.fuzz.mutate import mutate
from tests.fuzz.seeds import Seed, load_seeds


@dataclass
class CampaignResult:
    tried: int = 0
    exit_codes: list[int | None] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0


def campaign(rng: random.Random, count: int, timeout: float = 20.0, save: Path | None = None,
             progress: Callable[[int], None] | None = None) -> CampaignResult:
    """Mutate random seeds ``count`` times and run `why` on each; collect every contract violation."""
    preload()
    seeds = load_seeds()
    result = CampaignResult()
    try:
        _run(rng, seeds, count, timeout, save, progress, result)
    except KeyboardInterrupt:  # SIGINT/SIGTERM by hand: report what was tried so far
        pass
    return result


def _run(rng: random.Random, seeds: list[Seed], count: int, timeout: float, save: Path | None,
         progress: Callable[[int], None] | None, result: CampaignResult) -> None:
    for i in range(count):
        seed = rng.choice(seeds)
        m = mutate(rng, seed.files)
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
