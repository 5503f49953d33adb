/**
 * The admin console's one HTML page (`GET /console`). Everything it runs or styles comes from
 * `/console/console.js` and `/console/console.css` on the same origin: no inline script, no inline
 * style, so the page works under `script-src 'self'; style-src 'self'` (see `routes/Console.ts`).
 */

export const consoleHtml: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Accord console</title>
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/console.css">
<script type="module" src="/console/console.js"></script>
</head>
<body>
<header class="top">
<p class="brand">Accord console</p>
<p id="who" class="who" hidden></p>
<button id="sign-out" type="button" hidden>Sign out</button>
</header>
<nav id="nav" aria-label="Screens" hidden>
<ul>
<li><a href="#/keys" data-screen="keys">Direct API keys</a></li>
<li><a href="#/events" data-screen="events">Events</a></li>
<li><a href="#/account" data-screen="account">Account profile</a></li>
<li><a href="#/catalog" data-screen="catalog">Catalog</a></li>
<li><a href="#/connector" data-screen="connector">Action connector</a></li>
<li><a href="#/actions" data-screen="actions">Action requests</a></li>
<li><a href="#/gates" data-screen="gates">Feature gates</a></li>
<li><a href="#/sessions" data-screen="sessions">Runtime sessions</a></li>
<li><a href="#/approvals" data-screen="approvals">Approvals</a></li>
<li><a href="#/erasures" data-screen="erasures">Erasures</a></li>
</ul>
</nav>
<main id="main"><p>Loading…</p></main>
<noscript><p>The Accord console needs JavaScript.</p></noscript>
</body>
</html>
`

/**
 * The page's icon (`GET /console/icon.svg`), so the browser asks for no `/favicon.ico`.
 */
export const consoleIcon: string = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d2330"/><path d="M4 12 8 3l4 9M5.6 9h4.8" stroke="#fff" stroke-width="1.6" fill="none"/></svg>
`
