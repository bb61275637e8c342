// Draws the page of `treeattn view` from the JSON in #view-data: a tree with dependency
// arcs per sentence, the attention of the chosen layer and head as a heat map (a word's
// row once it is clicked), and the mechanism's own panels. No library, nothing fetched.
"use strict";

const DATA = JSON.parse(document.getElementById("view-data").textContent);
const SVG = "http://www.w3.org/2000/svg"; // the SVG namespace name, not a download
const state = { layer: DATA.layers - 1, head: -1, selected: DATA.sentences.map(() => null) };

function svg(tag, attrs, parent) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

function html(tag, attrs, parent, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// White to dark blue through teal: readable in print, no colour name needed.
const STOPS = [[255, 255, 255], [199, 233, 180], [65, 182, 196], [34, 94, 168], [8, 29, 88]];
function colour(v) {
  const x = Math.max(0, Math.min(1, v)) * (STOPS.length - 1);
  const i = Math.min(Math.floor(x), STOPS.length - 2);
  const t = x - i;
  const rgb = STOPS[i].map((c, k) => Math.round(c + t * (STOPS[i + 1][k] - c)));
  return `rgb(${rgb.join(",")})`;
}

function labels(sentence) {
  return sentence.nodes.concat(sentence.words);
}

// A layer by name: a pretrained backbone's come first ("MiniLM layer 3"), then the model's.
function layerName(layer) {
  return DATA.layer_names ? DATA.layer_names[layer] : `layer ${layer + 1}`;
}

// One head's attention (q x k bytes, row by row), decoded from base64 on first use.
const decoded = new Map();
function headBytes(s, layer, h) {
  const key = `${s}/${layer}/${h}`;
  if (!decoded.has(key)) {
    const text = atob(DATA.sentences[s].attention[layer][h]);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    decoded.set(key, bytes);
  }
  return decoded.get(key);
}

// The head a layer shows for the chosen one: the mean (-1) where the layer has fewer heads
// (a backbone's layers and the layers on top may have different numbers).
function shownHead(s, layer, head) {
  return head < DATA.sentences[s].attention[layer].length ? head : -1;
}

// One query's attention over the keys, in [0, 1]: head h, or the mean over heads (h < 0).
// A layer over the words only (a backbone's, under phrase nodes) gives the nodes nothing.
function row(s, layer, head, q) {
  const size = labels(DATA.sentences[s]).length;
  const heads = DATA.sentences[s].attention[layer].length;
  head = shownHead(s, layer, head);
  const pick = head < 0 ? [...Array(heads).keys()] : [head];
  const out = new Array(size).fill(0);
  for (const h of pick) {
    const bytes = headBytes(s, layer, h);
    const side = Math.round(Math.sqrt(bytes.length));
    const skip = size - side;
    if (q < skip) continue;
    for (let k = 0; k < side; k++) {
      out[skip + k] += bytes[(q - skip) * side + k] / DATA.levels / pick.length;
    }
  }
  return out;
}

// ---- the tree, the words and the dependency arcs ------------------------------------

function layoutTree(sentence, width) {
  const nodes = [];
  function walk(node, depth) {
    if (typeof node === "number") return { x: (node + 0.5) * width, leaf: node };
    const kids = node.children.map((child) => walk(child, depth + 1));
    const placed = { x: kids.reduce((a, k) => a + k.x, 0) / kids.length, depth, node, kids };
    nodes.push(placed);
    return placed;
  }
  const root = sentence.tree ? walk(sentence.tree, 0) : null;
  const deepest = nodes.reduce((a, n) => Math.max(a, n.depth), -1);
  return { root, nodes, deepest };
}

// Word i's arc from its head (0: the root; null: a token outside the tree), labelled with
// its relation where `relations` are given, below the arc's lowest point.
function drawArcs(group, heads, width, top, cls, relations) {
  heads.forEach((head, i) => {
    const x = (i + 0.5) * width;
    if (head === null) return; // a token outside the tree (a start token)
    const relation = relations ? relations[i] : null;
    let labelX = x, labelY = top + 24;
    if (head === 0) {
      svg("line", { x1: x, y1: top, x2: x, y2: top + 14, class: cls + " root" }, group);
    } else {
      const hx = (head - 0.5) * width;
      const bend = 10 + 9 * Math.sqrt(Math.abs(head - 1 - i));
      const d = `M${hx},${top} C${hx},${top + bend} ${x},${top + bend} ${x},${top}`;
      const path = svg("path", { d, class: cls }, group);
      if (relation) svg("title", {}, path).textContent = relation;
      svg("circle", { cx: x, cy: top + 2, r: 2.2, class: cls + "-end" }, group);
      labelX = (hx + x) / 2;
      labelY = top + 0.75 * bend + 9; // a cubic's lowest point is 3/4 of its bend
    }
    if (relation) {
      const text = svg("text", { x: labelX, y: labelY, class: cls + "-label" }, group);
      text.textContent = relation;
    }
  });
}

function drawTree(section, s) {
  const sentence = DATA.sentences[s];
  const n = sentence.words.length;
  const longest = sentence.words.reduce((a, w) => Math.max(a, w.length), 3);
  const width = Math.max(34, Math.min(90, 7.5 * longest + 12));
  const { nodes, deepest } = layoutTree(sentence, width);
  const level = 34;
  const wordY = (deepest + 1) * level + 22;
  const latentRows = sentence.latent.length ? 60 : 0;
  const height = wordY + 70 + latentRows;
  const box = html("div", { class: "scroll" }, section);
  const root = svg("svg", { class: "tree", width: n * width + 10, height }, box);
  const lines = svg("g", { class: "branches" }, root);
  const m = sentence.nodes.length;
  function joinTo(parent, kid) {
    const y2 = kid.leaf !== undefined ? wordY - 13 : kid.depth * level + 10;
    svg("line", { x1: parent.x, y1: parent.depth * level + 16, x2: kid.x, y2 }, lines);
  }
  for (const placed of nodes) {
    placed.kids.forEach((kid) => joinTo(placed, kid));
    const y = placed.depth * level + 14;
    const clickable = placed.node.node !== null && placed.node.node !== undefined;
    if (clickable) {
      const size = { x: placed.x - 24, y: y - 11, width: 48, height: 15 };
      svg("rect", { class: "tint", fill: "none", ...size }, root).dataset.q = placed.node.node;
    }
    const text = svg("text", { x: placed.x, y, class: clickable ? "node query" : "node" }, root);
    text.textContent = placed.node.label;
    if (clickable) text.dataset.q = placed.node.node;
  }
  sentence.words.forEach((word, i) => {
    const x = (i + 0.5) * width;
    const size = { x: x - width / 2 + 2, y: wordY - 12, width: width - 4, height: 16 };
    const tint = svg("rect", { class: "tint", fill: "none", ...size }, root);
    tint.dataset.q = m + i;
    const text = svg("text", { x, y: wordY, class: "word query" }, root);
    text.dataset.q = m + i;
    text.textContent = word;
  });
  if (sentence.arcs) {
    const group = svg("g", { class: "arcs" }, root);
    drawArcs(group, sentence.arcs, width, wordY + 8, "arc", sentence.relations);
  }
  // Where the arcs are not the tree's own head-rule arcs, the page says so under it.
  if (sentence.arcs_note) html("p", { class: "caption arcs-note" }, section, sentence.arcs_note);
  svg("g", { class: "latent" }, root).dataset.top = wordY + 64;
  root.dataset.width = width;
  root.addEventListener("click", (event) => {
    const q = event.target.dataset ? event.target.dataset.q : undefined;
    if (q === undefined) return;
    select(s, Number(q));
  });
}

function drawLatent(section, s) {
  const sentence = DATA.sentences[s];
  if (!sentence.latent.length) return;
  const root = section.querySelector("svg.tree");
  const group = root.querySelector("g.latent");
  group.replaceChildren();
  const trees = sentence.latent[state.layer];
  const top = Number(group.dataset.top);
  const label = svg("text", { x: 4, y: top - 6, class: "latent-label" }, group);
  if (!trees.length) { // a pretrained backbone's layer, under the structured ones
    label.textContent = `no latent tree in ${layerName(state.layer)}`;
    return;
  }
  const head = Math.min(Math.max(state.head, 0), trees.length - 1);
  label.textContent = `latent tree, ${layerName(state.layer)} head ${head + 1}`;
  drawArcs(group, trees[head], Number(root.dataset.width), top, "latent-arc");
}

// ---- heat maps ------------------------------------------------------------------------

// Colours run from 0 to the grid's largest value (probabilities are often small), given
// in its caption; every cell keeps its own value in data-v.
function grid(parent, rows, cols, value, options) {
  const cell = options.cell;
  let top_value = 0;
  rows.forEach((_, r) => cols.forEach((_, k) => { top_value = Math.max(top_value, value(r, k)); }));
  const scale = options.absolute || top_value === 0 ? 1 : top_value;
  const left = options.left, top = options.top;
  const root = svg("svg", {
    class: options.cls,
    width: left + cols.length * cell + 10,
    height: top + rows.length * cell + 6,
  }, parent);
  cols.forEach((name, k) => {
    const x = left + (k + 0.5) * cell;
    const text = svg("text", { x, y: top - 4, class: "col", transform: `rotate(-60 ${x} ${top - 4})` }, root);
    text.textContent = name;
  });
  rows.forEach((name, r) => {
    const text = svg("text", { x: left - 4, y: top + (r + 0.7) * cell, class: "row" }, root);
    text.textContent = name;
    if (options.rowData) Object.assign(text.dataset, options.rowData(r));
    cols.forEach((_, k) => {
      const v = value(r, k);
      const rect = svg("rect", {
        x: left + k * cell, y: top + r * cell, width: cell, height: cell, fill: colour(v / scale),
      }, root);
      Object.assign(rect.dataset, options.cellData(r, k), { v: v.toFixed(3) });
      if (options.numbers) {
        const t = svg("text", { x: left + (k + 0.5) * cell, y: top + (r + 0.6) * cell, class: "number" }, root);
        t.textContent = v.toFixed(2);
        t.setAttribute("fill", v / scale > 0.5 ? "white" : "black");
      }
    });
  });
  root.dataset.top = top_value.toFixed(3);
  return root;
}

function drawHeatmap(section, s) {
  const sentence = DATA.sentences[s];
  const box = section.querySelector(".heatmap-box");
  box.replaceChildren();
  const names = labels(sentence);
  const longest = names.reduce((a, w) => Math.max(a, w.length), 3);
  const margin = Math.min(150, 6.5 * longest + 10);
  const q = state.selected[s];
  const layer = state.layer;
  const caption = html("p", { class: "caption" }, box);
  if (!DATA.layers) {
    caption.textContent = "no word-to-word attention is shown for this model; its panels follow";
    return;
  }
  let drawn;
  if (q === null) {
    const head = shownHead(s, layer, state.head);
    caption.textContent = `${layerName(layer)}, ${head < 0 ? "mean over heads" : "head " + (head + 1)}: ` +
      "each row is a query, each column a key; click a word to see where it attends";
    const cell = Math.max(7, Math.min(18, 520 / names.length));
    const rows = names.map((_, r) => row(s, layer, head, r));
    drawn = grid(box, names, names, (r, k) => rows[r][k], {
      cls: "heatmap", cell, left: margin, top: margin,
      cellData: (r, k) => ({ q: r, k }), rowData: (r) => ({ q: r }),
    });
    drawn.addEventListener("click", (event) => {
      const picked = event.target.dataset ? event.target.dataset.q : undefined;
      if (picked !== undefined) select(s, Number(picked));
    });
  } else {
    caption.textContent = `${layerName(layer)}: where "${names[q]}" attends, every head and ` +
      "their mean (click it again for the whole map)";
    const order = sentence.attention[layer].map((_, h) => h).concat([-1]);
    const rows = order.map((h) => row(s, layer, h, q));
    const headNames = order.map((h) => (h < 0 ? "mean" : `head ${h + 1}`));
    const cell = Math.max(9, Math.min(22, 700 / names.length));
    drawn = grid(box, headNames, names, (r, k) => rows[r][k], {
      cls: "heatmap row-view", cell, left: 60, top: margin,
      cellData: (r, k) => ({ q, k, head: order[r] < 0 ? "mean" : order[r] }),
    });
  }
  caption.textContent += `; darkest: ${drawn.dataset.top}`;
}

function tintWords(section, s) {
  const q = state.selected[s];
  const weights = q === null ? null : row(s, state.layer, state.head, q);
  const top = weights === null ? 1 : Math.max(...weights) || 1;
  section.querySelectorAll("svg.tree rect.tint").forEach((rect) => {
    const k = Number(rect.dataset.q);
    // Never darker than mid-scale, so that the word on it stays readable.
    rect.setAttribute("fill", weights === null ? "none" : colour(0.6 * weights[k] / top));
  });
  section.querySelectorAll("svg.tree .query").forEach((text) => {
    text.classList.toggle("selected", q !== null && Number(text.dataset.q) === q);
  });
}

function drawPanels(section, s) {
  const box = section.querySelector(".panels");
  box.replaceChildren();
  for (const panel of DATA.sentences[s].panels) {
    const div = html("div", { class: "panel" }, box);
    // The panel's layer nearest below the slider's (a decoder may have fewer layers than
    // the encoder, syntax may be in some of a backbone's layers only), else its first.
    const at = panel.layers || panel.values.map((_, i) => i);
    const below = at.filter((l) => l <= state.layer).length;
    const index = panel.per_layer ? Math.max(below - 1, 0) : 0;
    html("h3", {}, div, panel.title + (panel.per_layer ? `, ${layerName(at[index])}` : ""));
    if (panel.note) html("p", { class: "note" }, div, panel.note);
    const values = panel.values[index];
    const cols = panel.cols.length;
    const small = panel.rows.length * cols <= 16;
    const longest = panel.rows.concat(panel.cols).reduce((a, w) => Math.max(a, w.length), 3);
    const margin = Math.min(160, 6.5 * longest + 10);
    grid(div, panel.rows, panel.cols, (r, k) => values[r * cols + k] / DATA.scale, {
      cls: "panel-grid", cell: small ? 44 : Math.max(7, Math.min(16, 480 / cols)),
      absolute: !panel.relative,
      left: margin, top: margin, numbers: small, cellData: (r, k) => ({ r, k }),
    });
  }
}

function drawSentence(s) {
  const section = document.getElementById(`sentence-${s}`);
  drawHeatmap(section, s);
  tintWords(section, s);
  drawLatent(section, s);
  drawPanels(section, s);
}

function select(s, q) {
  if (!DATA.layers) return; // nothing to show for a word
  state.selected[s] = state.selected[s] === q ? null : q;
  inView.add(s);
  drawSentence(s);
}

// Heat maps and panels are drawn once a sentence comes into view (a page of long
// sentences holds hundreds of thousands of cells), and redrawn when the layer or head
// changes; trees are drawn at once.
const inView = new Set();

function redraw() {
  const value = document.getElementById("layer-value"); // no slider for one layer
  if (value) value.textContent = `${layerName(state.layer)} (${state.layer + 1} of ${DATA.layers})`;
  inView.forEach((s) => drawSentence(s));
}

function drawWhenSeen(section, s) {
  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((entry) => entry.isIntersecting)) return;
    observer.disconnect();
    inView.add(s);
    drawSentence(s);
    // When the first screen is complete, in ms since navigation began (for timing).
    if (!document.body.dataset.drawnAt) document.body.dataset.drawnAt = performance.now().toFixed(0);
  });
  observer.observe(section);
}

function build() {
  const main = document.getElementById("sentences");
  DATA.sentences.forEach((sentence, s) => {
    const section = html("section", { class: "sentence", id: `sentence-${s}` }, main);
    html("h2", {}, section, `${s + 1}. ${sentence.text || sentence.words.join(" ")}`);
    if (sentence.translation !== undefined) {
      html("p", { class: "translation" }, section, `translation: ${sentence.translation}`);
    }
    drawTree(section, s);
    html("div", { class: "heatmap-box" }, section);
    html("div", { class: "panels" }, section);
    drawWhenSeen(section, s);
  });
  // The page holds only the controls with something to choose (treeattn.viz.page).
  const slider = document.getElementById("layer");
  if (slider) {
    slider.max = DATA.layers;
    slider.value = slider.max;
    slider.addEventListener("input", () => {
      state.layer = Number(slider.value) - 1;
      redraw();
    });
  }
  const head = document.getElementById("head");
  if (head) {
    for (let h = 0; h < DATA.heads; h++) html("option", { value: h }, head, `head ${h + 1}`);
    head.addEventListener("change", () => {
      state.head = Number(head.value);
      redraw();
    });
  }
  redraw();
  document.body.dataset.ready = "true";
}

build();
