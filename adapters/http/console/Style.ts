/**
 * The admin console's style sheet (`GET /console/console.css`): plain CSS, readable without it.
 */

export const consoleCss: string = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #d6dae3; --accent: #1f5fbf; --bad: #a4262c; --ok: #1e7a3a; --paper: #ffffff; --wash: #f4f6fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--wash); }
[hidden] { display: none !important; }
.top { display: flex; gap: 1rem; align-items: center; padding: .6rem 1.2rem; background: var(--ink); color: #fff; }
.brand { font-weight: 700; margin: 0; }
.who { margin: 0 0 0 auto; font-size: .9rem; opacity: .9; }
.top button { background: transparent; color: #fff; border-color: #fff; }
nav { background: var(--paper); border-bottom: 1px solid var(--line); }
nav ul { list-style: none; margin: 0; padding: 0 1.2rem; display: flex; flex-wrap: wrap; gap: .2rem 1.2rem; }
nav a { display: inline-block; padding: .6rem 0; color: var(--accent); text-decoration: none; border-bottom: 3px solid transparent; }
nav a[aria-current="page"] { color: var(--ink); border-bottom-color: var(--accent); font-weight: 600; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem 1.2rem 3rem; }
h1, h2 { margin: .6rem 0 .4rem; }
h3 { margin: 1.2rem 0 .4rem; font-size: 1.05rem; }
section { background: var(--paper); border: 1px solid var(--line); border-radius: 6px; padding: .4rem 1rem 1rem; margin: 1rem 0; }
.crumbs, .hint, .note { color: var(--muted); font-size: .9rem; }
form { display: grid; gap: .7rem; max-width: 40rem; }
form.inline { grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); max-width: none; align-items: end; }
.field { display: grid; gap: .2rem; }
label { font-weight: 600; font-size: .9rem; }
input, select { font: inherit; padding: .4rem .5rem; border: 1px solid #9aa3b5; border-radius: 4px; background: #fff; color: var(--ink); min-width: 0; }
input[aria-invalid="true"] { border-color: var(--bad); box-shadow: 0 0 0 1px var(--bad); }
button { font: inherit; padding: .4rem .9rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.quiet { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
button:disabled { opacity: .6; cursor: progress; }
:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
.actions { display: flex; gap: .6rem; flex-wrap: wrap; align-items: center; }
.problem:empty { display: none; }
.problem { border: 1px solid var(--bad); border-left-width: 5px; background: #fdf1f1; color: var(--bad); padding: .3rem .8rem; border-radius: 4px; }
.problem p, .problem ul { margin: .3rem 0; }
.status { border-left: 5px solid var(--ok); background: #eff8f2; padding: .3rem .8rem; border-radius: 4px; }
.status.failed { border-left-color: var(--bad); background: #fdf1f1; }
.secret { border: 2px solid #f0a500; background: #fffaf0; }
.secret-value { display: block; font: 1rem/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; padding: .5rem; background: #fff; border: 1px dashed #c48a00; word-break: break-all; user-select: all; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--wash); }
td code, dd code { font-size: .85rem; overflow-wrap: anywhere; }
.json { font: .8rem/1.3 ui-monospace, SFMono-Regular, Menlo, monospace; margin: 0; white-space: pre-wrap; overflow-wrap: break-word; word-break: normal; }
dl.kv { grid-template-columns: fit-content(11rem) minmax(0, 1fr); gap: 0 .6rem; margin: 0; font-size: .85rem; }
dl.kv dt { font-weight: 500; overflow-wrap: anywhere; }
dl.kv dd { overflow-wrap: anywhere; min-width: 0; }
dl.kv dl.kv { padding-left: .4rem; border-left: 2px solid var(--line); }
section.result:has(> div:empty) { display: none; }
.warning { display: block; color: var(--bad); font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 20rem), 1fr)); gap: .6rem 1.2rem; }
.charts h3 { grid-column: 1 / -1; }
figure.chart { margin: .4rem 0; min-width: 0; }
.chart-svg { display: block; width: 100%; height: auto; max-height: 12rem; }
.chart-svg .axis { stroke: var(--muted); stroke-width: 1; }
.chart-svg .tick { font: 9px system-ui, sans-serif; fill: var(--muted); }
figcaption { font-size: .85rem; }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .1rem .9rem; margin: .2rem 0 0; padding: 0; }
.swatch { display: inline-block; width: .7rem; height: .7rem; margin-right: .3rem; border-radius: 2px; vertical-align: baseline; }
.series-0 { fill: #1f5fbf; background: #1f5fbf; } .series-1 { fill: #1e7a3a; background: #1e7a3a; }
.series-2 { fill: #c27c0e; background: #c27c0e; } .series-3 { fill: #a4262c; background: #a4262c; }
.series-4 { fill: #6b3fa0; background: #6b3fa0; } .series-5 { fill: #0f7c86; background: #0f7c86; }
.series-6 { fill: #7a5c3a; background: #7a5c3a; } .series-7 { fill: #5b6475; background: #5b6475; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .4rem 0; }
dt { font-weight: 600; color: var(--muted); }
dd { margin: 0; }
ul.items { list-style: none; margin: .4rem 0; padding: 0; display: grid; gap: .2rem; }
ul.items button { text-align: left; max-width: 100%; overflow-wrap: anywhere; }
/* a revoke step's note and warning wrap in their own width, so they do not squeeze the row's ids */
td .actions { flex-wrap: wrap; max-width: 24rem; }
/* Narrow screens: each table row becomes a block of labelled lines, so nothing is wider than its card. */
@media (max-width: 44rem) {
  .top { flex-wrap: wrap; padding: .5rem .8rem; gap: .3rem .8rem; }
  .who { margin: 0; flex-basis: 100%; order: 3; overflow-wrap: anywhere; }
  nav ul { padding: 0 .8rem; gap: 0 .9rem; }
  main { padding: .6rem .6rem 2rem; }
  section { padding: .3rem .7rem .8rem; }
  form.inline { grid-template-columns: minmax(0, 1fr); }
  dl { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dd { margin-bottom: .35rem; overflow-wrap: anywhere; }
  dl.kv { grid-template-columns: minmax(0, 1fr); }
  dl.kv dd { margin: 0 0 .2rem; }
  table, thead, tbody, tr, td, caption { display: block; width: 100%; }
  thead { display: none; }
  tr { border-bottom: 2px solid var(--line); padding: .3rem 0; }
  td { border: 0; padding: .15rem 0; display: grid; grid-template-columns: 7rem minmax(0, 1fr); gap: .5rem; overflow-wrap: anywhere; }
  td::before { content: attr(data-label); font-weight: 600; color: var(--muted); }
  td[data-label=""] { grid-template-columns: minmax(0, 1fr); }
  td[data-label=""]::before { content: none; }
}
.pager { display: flex; gap: .6rem; align-items: center; margin-top: .6rem; }
`
