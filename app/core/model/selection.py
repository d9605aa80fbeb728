"""The set of selected graph nodes, observable without Qt (the precision plan edits this set)."""

from __future__ import annotations

from collections.abc import Callable, Iterable


class SelectionModel:
    """Selected display-node indices plus the current (last clicked) node; notifies listeners."""

    def __init__(self) -> None:
        self._selected: set[int] = set()
        self._current: int | None = None
        self._listeners: list[Callable[[], None]] = []

    def subscribe(self, fn: Callable[[], None]) -> None:
        self._listeners.append(fn)

    def unsubscribe(self, fn: Callable[[], None]) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    @property
    def selected(self) -> frozenset[int]:
        return frozenset(self._selected)

    @property
    def current(self) -> int | None:
        return self._current

    def __contains__(self, node: int) -> bool:
        return node in self._selected

    def __len__(self) -> int:
        return len(self._selected)

    def set(self, nodes: Iterable[int], current: int | None = None) -> None:
        new = set(nodes)
        cur = current if current is not None else (next(iter(new)) if len(new) == 1 else None)
        if new == self._selected and cur == self._current:
            return
        self._selected, self._current = new, cur
        self._emit()

    def add(self, nodes: Iterable[int], current: int | None = None) -> None:
        self.set(self._selected | set(nodes), current if current is not None else self._current)

    def toggle(self, node: int) -> None:
        if node in self._selected:
            rest = self._selected - {node}
            self.set(rest, self._current if self._current in rest else None)
        else:
            self.add([node], node)

    def clear(self) -> None:
        self.set([], None)

    def _emit(self) -> None:
        for fn in list(self._listeners):
            fn()
