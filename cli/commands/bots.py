"""Bot accounts of a site's game store (the one `orderchaos serve --db` uses). `bots add NAME`
makes an account and prints its token once, alone on the last line: keep it in a file for
`orderchaos bot --token-file`; the store keeps only its SHA-256. `bots list` shows the
accounts, `bots revoke NAME` ends a token (a running server closes its connections within a
second; its games are lost on time). Bot names are 2 to 30 letters, digits, - or _.
"""

from __future__ import annotations

import argparse
import sys

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``bots``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    db_help = ("the game store: PATH, sqlite:///PATH or postgresql://USER@HOST:PORT/DB "
               "(default: the one serve uses)")
    add = actions.add_parser("add", help="make a bot account and print its token once", description=__doc__)
    add.add_argument("name", metavar="NAME", help="the bot's name")
    add.add_argument("--db", metavar="URL", help=db_help)
    listing = actions.add_parser("list", help="the bot accounts", description=__doc__)
    listing.add_argument("--db", metavar="URL", help=db_help)
    revoke = actions.add_parser("revoke", help="end a bot's token", description=__doc__)
    revoke.add_argument("name", metavar="NAME", help="the bot's name")
    revoke.add_argument("--db", metavar="URL", help=db_help)


def run(args: argparse.Namespace) -> int:
    """Carry out the action; 2 for bad input, 1 when the store does not answer."""
    import datetime

    from orderchaos.web import bots
    from orderchaos.web.store import StoreUnavailable, default_db_path

    location = args.db or str(default_db_path())
    if args.action == "add":
        try:
            bots.check_name(args.name)
        except bots.BotAccountError as exc:
            print(f"orderchaos bots: {exc}", file=sys.stderr)
            return 2
    store = options.open_store("bots", location)
    if isinstance(store, int):
        return store
    try:
        if args.action == "add":
            token = bots.add_account(store, args.name)
            print(f"orderchaos bots: made bot:{args.name} in {store.path}; its token (shown once, keep it in a "
                  f"file for orderchaos bot --token-file):")
            print(token, flush=True)
        elif args.action == "revoke":
            bots.revoke_account(store, args.name)
            print(f"orderchaos bots: revoked bot:{args.name}")
        else:
            accounts = bots.list_accounts(store)
            if not accounts:
                print(f"orderchaos bots: no bot accounts in {store.path}")
            for account in accounts:
                made = datetime.datetime.fromtimestamp(account["created"], datetime.timezone.utc)
                state = "revoked" if account["revoked"] is not None else "live"
                print(f"bot:{account['name']:<30} {state:<8} made {made:%Y-%m-%d %H:%M} UTC")
    except bots.BotAccountError as exc:
        print(f"orderchaos bots: {exc}", file=sys.stderr)
        return 2
    except StoreUnavailable as exc:
        print(f"orderchaos bots: --db {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    return 0
