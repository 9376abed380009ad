"""The browser interface behind ``orderchaos serve``: play, watch and study games.

:mod:`orderchaos.web.app` builds the ASGI app (Starlette, one WebSocket per game);
:mod:`orderchaos.web.sessions` holds the game logic each connection drives, and the
page itself (HTML, CSS, JavaScript, an SVG board) lives in ``static/``. Nothing outside
this package imports the web stack, so ``import orderchaos`` never needs it.
"""
