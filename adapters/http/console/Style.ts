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
td code, dd code { font-size: .85rem; word-break: break-all; }
.json { font: .8rem/1.3 ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .4rem 0; }
dt { font-weight: 600; color: var(--muted); }
dd { margin: 0; }
ul.items { list-style: none; margin: .4rem 0; padding: 0; display: grid; gap: .2rem; }
ul.items button { text-align: left; }
.pager { display: flex; gap: .6rem; align-items: center; margin-top: .6rem; }
`
