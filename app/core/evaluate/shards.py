"""One evaluation split over several workers (a `trtlab batch` eval cell with ``shards: K``).

Shard ``(index, count)`` runs every target on its slice of the evaluation's image order, ``order[index::count]``,
and keeps each answer in the answer cache (answers.py); the batch's final job then runs the whole evaluation, reads
those answers back and computes only what no shard left there, so its result is the one a single worker gives. A
shard other than the first also runs the order's first image: the reference proves the outputs' kinds on it, as a
single worker does (once the cache holds the kinds, that image is read from the cache like any other).

A shard's result is small: its slice and, per target, how many images it ran and how many came from the cache
(`shard_doc`; typed as app.core.results' `EvalShardResult`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def shard_order(order: Sequence[int], shard: tuple[int, int] | None) -> list[int]:
    """The images a job runs, in the evaluation's order: all of them, or shard ``(index, count)``'s slice (with the
    order's first image ahead of it for every shard but the first)."""
    if shard is None:
        return list(order)
    index, count = shard
    part = list(order[index::count])
    return part if index == 0 or not order else [order[0], *part]


def shard_doc(order: Sequence[int], shard: tuple[int, int], cached: Mapping[str, int], seconds: float) -> dict:
    """A shard's result JSON: ``shard`` [index, count], the ``images`` it ran (every target the same), ``cached`` how
    many of them each target read from the answer cache, ``computed`` how many it ran, ``seconds``."""
    images = len(shard_order(order, shard))
    return {"shard": [int(shard[0]), int(shard[1])], "images": int(images),
            "cached": {name: int(n) for name, n in cached.items()},
            "computed": {name: int(images) - int(n) for name, n in cached.items()}, "seconds": round(seconds, 3)}
