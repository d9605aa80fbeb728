// Lays out one graph with @dagrejs/dagre using Netron's settings and prints the result as JSON.
//
// Usage: node --stack-size=65500 dagre_layout.js GRAPH.json OUT.json
// (dagre recurses deeply; a 64 MB JS stack also needs `ulimit -s` above that, or node segfaults on
// 50k-node graphs. benchmarks/graph_layout.py runs it that way.)
// GRAPH.json: {"nodes": [[width, height], ...], "edges": [[src, dst], ...]}
// OUT.json:   {"seconds": layout time, "ranker": ..., "x": [...], "y": [...],
//              "max_rss_mb": peak RSS, "edges": [[src, dst, [x0, y0, x1, y1, ...]], ...]}
// The time covers dagre.layout() only: node start-up, JSON parsing and graph building are excluded.
'use strict';

const fs = require('fs');
const path = require('path');

const dagre = require(path.join(__dirname, '.node', 'node_modules', '@dagrejs', 'dagre'));

const [input, output] = process.argv.slice(2);
const graphIn = JSON.parse(fs.readFileSync(input, 'utf8'));
const nodes = graphIn.nodes;
// Netron (source/grapher.js) switches to the cheap ranker above 3000 nodes.
const ranker = nodes.length > 3000 ? 'longest-path' : 'network-simplex';

const g = new dagre.graphlib.Graph({ compound: false, multigraph: false });
g.setGraph({ rankdir: 'TB', nodesep: 20, ranksep: 20, ranker });
g.setDefaultEdgeLabel(() => ({}));
nodes.forEach((wh, i) => g.setNode(String(i), { width: wh[0], height: wh[1] }));
for (const [s, t] of graphIn.edges) {
  g.setEdge(String(s), String(t));
}

const t0 = process.hrtime.bigint();
dagre.layout(g);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;

const x = new Array(nodes.length);
const y = new Array(nodes.length);
nodes.forEach((_, i) => {
  const n = g.node(String(i));
  x[i] = n.x;
  y[i] = n.y;
});
const edges = g.edges().map((e) => {
  const pts = [];
  for (const p of g.edge(e).points || []) {
    pts.push(p.x, p.y);
  }
  return [Number(e.v), Number(e.w), pts];
});
// maxRSS is the process's peak resident memory in KiB (graph, layout and start-up together).
const max_rss_mb = process.resourceUsage().maxRSS / 1024;
fs.writeFileSync(output, JSON.stringify({ seconds, ranker, max_rss_mb, x, y, edges }));
