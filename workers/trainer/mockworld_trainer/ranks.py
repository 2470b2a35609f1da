"""Which share of a step's work this process does: the whole of it alone, or one rank's under torchrun.

Every rank reads the same batch (the batch reference comes from rank 0) and plans the step the same
way, so each knows without asking which transcripts every rank takes and how many micro-batches each
runs. A rank with fewer micro-batches runs empty ones (a forward that adds zero to the loss), because
FSDP's all-gathers and reduce-scatters need every rank in every forward and backward. Sums that make
the metrics (tokens, clipped tokens, loss terms) are added over ranks at the end of the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .model import Encoded


@dataclass(frozen=True)
class Ranks:
    """This process's rank among ``world`` (1 and 0 alone). ``grad_scale`` undoes FSDP's gradient average."""

    rank: int = 0
    world: int = 1

    @property
    def grad_scale(self) -> float:
        # FSDP averages gradients over ranks; the step's loss is a sum over all ranks' tokens divided
        # by the mini-batch's token count, so each rank's part is scaled back up by the world size.
        return float(self.world)

    def assign(self, encoded: Sequence[Encoded], indices: Sequence[int]) -> list[list[int]]:
        """The transcripts of ``indices`` per rank, balanced by tokens: longest first, to the least loaded
        rank (ties: lowest rank), so every rank computes the same assignment."""
        shares: list[list[int]] = [[] for _ in range(self.world)]
        load = [0] * self.world
        for i in sorted(indices, key=lambda i: (-len(encoded[i].input_ids), i)):
            r = min(range(self.world), key=lambda r: (load[r], r))
            shares[r].append(i)
            load[r] += len(encoded[i].input_ids)
        return [sorted(s) for s in shares]

    def mine(self, encoded: Sequence[Encoded], indices: Sequence[int]) -> list[int]:
        return self.assign(encoded, indices)[self.rank]

    def sum(self, values: Sequence[float], device: torch.device) -> list[float]:
        """Element-wise sums over ranks (float64), the values themselves alone."""
        if self.world == 1:
            return [float(v) for v in values]
        t = torch.tensor(list(values), dtype=torch.float64, device=device)
        dist.all_reduce(t)
        return t.tolist()

    def gather(self, value: float, device: torch.device) -> list[float]:
        """``value`` of every rank, in rank order."""
        if self.world == 1:
            return [float(value)]
        out = [torch.zeros(1, dtype=torch.float64, device=device) for _ in range(self.world)]
        dist.all_gather(out, torch.tensor([float(value)], dtype=torch.float64, device=device))
        return [float(t) for t in out]


ALONE = Ranks()


def current() -> Ranks:
    """The ranks of the initialized default process group, else ALONE."""
    if dist.is_available() and dist.is_initialized():
        return Ranks(dist.get_rank(), dist.get_world_size())
    return ALONE
