/**
 * The API reference page's style sheet (`GET /reference/reference.css`): plain CSS; the page reads
 * well without it.
 */

export const referenceCss: string = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #d6dae3; --accent: #1f5fbf; --paper: #fff; --wash: #f4f6fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--wash); }
header { padding: .8rem 1.2rem; background: var(--ink); color: #fff; }
header a { color: #fff; }
header h1 { margin: 0; font-size: 1.4rem; }
.version { font-size: .9rem; opacity: .8; font-weight: 400; }
.layout { display: grid; grid-template-columns: minmax(14rem, 22rem) 1fr; gap: 1rem; padding: 1rem 1.2rem; }
nav { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow: auto; font-size: .85rem; }
nav ul { list-style: none; margin: 0; padding-left: .6rem; overflow-wrap: anywhere; }
nav > ul { padding: 0; }
nav > ul > li { margin: .6rem 0 .2rem; font-weight: 600; }
nav li li { font-weight: 400; }
a { color: var(--accent); }
main { min-width: 0; }
section { background: var(--paper); border: 1px solid var(--line); border-radius: 6px; padding: .4rem 1rem 1rem; margin: 0 0 1rem; }
article { border-top: 1px solid var(--line); padding-top: .6rem; margin-top: .8rem; }
h3 { font-size: 1.05rem; margin: .4rem 0; overflow-wrap: anywhere; }
h4 { margin: .8rem 0 .3rem; font-size: .95rem; }
h5 { margin: .6rem 0 .2rem; font-size: .9rem; }
.method { display: inline-block; min-width: 4.2rem; text-align: center; border-radius: 4px; padding: 0 .4rem; color: #fff; background: var(--muted); font-size: .85rem; }
.method-get { background: #1e7a3a; } .method-post { background: #1f5fbf; } .method-put { background: #8a5a00; } .method-delete { background: #a4262c; }
.summary { font-weight: 600; }
.type { color: var(--muted); font-family: ui-monospace, monospace; font-size: .85rem; }
.optional { color: var(--muted); font-size: .8rem; font-style: italic; }
.fields { margin: .2rem 0; padding-left: 1.2rem; font-size: .9rem; }
.status { font-family: ui-monospace, monospace; }
.status-2 .status { color: #1e7a3a; } .status-4 .status, .status-5 .status { color: #a4262c; }
pre.example { background: var(--wash); border: 1px solid var(--line); border-radius: 4px; padding: .5rem; overflow: auto; font-size: .8rem; }
table { border-collapse: collapse; font-size: .88rem; width: 100%; }
th, td { border-bottom: 1px solid var(--line); text-align: left; padding: .25rem .4rem; vertical-align: top; }
code { font-family: ui-monospace, monospace; font-size: .88em; }
@media (max-width: 50rem) { .layout { grid-template-columns: 1fr; } nav { position: static; max-height: none; } }
`
