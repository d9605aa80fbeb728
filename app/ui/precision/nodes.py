"""The main graph's nodes by their plan keys: which ones the user selected, and showing one that a panel or a
result names (going back up from a subgraph, opening the groups around it)."""

from __future__ import annotations

from app.ui.graph.page import GraphPage
from app.ui.precision.plan_controller import PlanController


class GraphNodes:
    """The graph page's nodes, told apart by the plan's keys and ONNX node indices."""

    def __init__(self, page: GraphPage, plan: PlanController) -> None:
        self.page = page
        self.view = page.view
        self.plan = plan

    def at_root(self) -> bool:
        """Whether the main graph is on show (precision is planned there, not in a subgraph)."""
        return len(self.page.levels) == 1

    def selected_keys(self) -> list[str]:
        """Plan keys of the graph's selected nodes (a group box stands for every node inside it); none off the
        main graph."""
        pic = self.page.picture
        if pic is None or not self.at_root():
            return []
        g = pic.graph
        indices = sorted({m for n in self.view.selection.selected for m in g.onnx_nodes(n)})
        return [k for m in indices if (k := self.plan.key_of(m)) is not None]

    def selected_ops(self) -> list[str]:
        """The op types of the selected nodes."""
        pic = self.page.picture
        if pic is None:
            return []
        g = pic.graph
        return sorted({g.graph.node[m].op_type for n in self.view.selection.selected for m in g.onnx_nodes(n)})

    def onnx_index(self, node: int | None) -> int | None:
        """The ONNX node a drawn node is (None for a group box, an input or an output)."""
        pic = self.page.picture
        if pic is None or node is None or pic.graph.onnx_index[node] < 0:
            return None
        return int(pic.graph.onnx_index[node])

    def show_onnx_node(self, onnx_index: int) -> None:
        """Show an ONNX node of the main graph in the canvas, going back up from a subgraph if needed."""
        while len(self.page.levels) > 1:
            self.page.go_back()
        pic = self.page.picture
        flat = pic.all_nodes.node_of_onnx(onnx_index) if pic is not None else None
        node = self.page.reveal(flat) if flat is not None else None  # the groups around it open
        if node is not None:
            self.view.center_on_node(node)

    def show_key(self, key: str) -> None:
        """Show the node a plan key names (nothing when the model has no such node)."""
        row = next((r for r in self.plan.rows if r.key == key), None)
        if row is not None:
            self.show_onnx_node(row.index)

    def select_keys(self, keys: list[str]) -> None:
        """Show the first of these nodes that the graph draws and select all of those (a node only a variant has, a
        Cast or a Q/DQ, is not drawn)."""
        rows = {r.key: r.index for r in self.plan.rows}
        in_model = [k for k in keys if k in rows]
        pic = self.page.picture
        found = [pic.graph.node_of_onnx(rows[k]) for k in in_model] if pic else []
        nodes = [n for n in found if n is not None]
        if nodes:
            self.show_onnx_node(rows[in_model[0]])
            self.view.selection.set(nodes, nodes[0])
