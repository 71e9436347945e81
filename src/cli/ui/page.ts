// The page's one HTML document: a shell the script fills (no inline script or style: the CSP allows none).
export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>li</title>
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>
<body>
<header id="top"><a href="#/" id="home">li</a> <nav><a href="#/">runs</a> <a href="#/fleet">queues, watchers, deliveries</a></nav> <span id="live" class="live" title="live updates">connecting…</span></header>
<main id="main"><p>loading…</p></main>
<noscript>li ui needs JavaScript (its own script, served by this li; nothing is fetched from elsewhere).</noscript>
</body>
</html>
`;
