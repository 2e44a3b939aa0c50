#!/usr/bin/env python3
"""streamd's /rest/ against clients this project did not write and against the OpenSubsonic
OpenAPI description (../shared/specs/opensubsonic-openapi):

- py-sonic (libsonic): token auth and legacy (enc:) auth, GET and POST;
- py-opensonic (libopensonic): its typed responses (mashumaro dataclasses) are a schema check;
  apiKey when --api-key is given;
- every JSON answer validated with jsonschema against the endpoint's response schema;
- the protocol's corners by hand: XML by default, .view, jsonp, booleans in any case, one-element
  lists as arrays, errors as HTTP 200 status="failed" with their codes.

Usage: check_subsonic.py BASE_URL --user U --password P [--api-key K] [--ids-out FILE]
Prints one line per check and "N passed, M failed"; exit 1 on any failure.
--ids-out writes the ids of every song, album and artist (keyed by their tags) as JSON.
"""
import argparse
import hashlib
import json
import os
import random
import string
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "specs", "opensubsonic-openapi")


def ensure_packages():
    wanted = {"libsonic": "py-sonic", "libopensonic": "py-opensonic", "jsonschema": "jsonschema",
              "rfc3339_validator": "rfc3339-validator"}
    missing = []
    for module, package in wanted.items():
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *missing])


ensure_packages()
import jsonschema  # noqa: E402
import libopensonic  # noqa: E402
import libsonic  # noqa: E402
from referencing import Registry, Resource  # noqa: E402
from referencing.jsonschema import DRAFT7  # noqa: E402

passed = 0
failed = 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def attempt(name, body):
    """Runs body(); a raised exception is a failed check."""
    try:
        result = body()
        check(name, True)
        return result
    except Exception as error:  # noqa: BLE001 - any client error is the finding
        check(name, False, f"{type(error).__name__}: {error}")
        return None


class Spec:
    """Response schemas of the OpenAPI description, resolved through their relative $refs."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.registry = Registry(retrieve=self.retrieve)

    def retrieve(self, uri):
        path = urllib.parse.urlparse(uri).path
        with open(path) as f:
            return Resource.from_contents(json.load(f), default_specification=DRAFT7)

    def schema(self, name):
        """A validator of one of the description's schemas (schemas/NAME.json)."""
        target = "file://" + os.path.join(self.root, "schemas", name + ".json")
        return jsonschema.Draft7Validator({"$ref": target}, registry=self.registry)

    def validator(self, endpoint):
        path = os.path.join(self.root, "endpoints", endpoint + ".json")
        with open(path) as f:
            described = json.load(f)
        response = described["get"]["responses"]["200"]
        base = os.path.dirname(path)
        if "$ref" in response:  # a shared response (EmptySubsonicResponse), its own file
            response_path = os.path.normpath(os.path.join(base, response["$ref"]))
            with open(response_path) as f:
                response = json.load(f)
            base = os.path.dirname(response_path)
        ref = response["content"]["application/json"]["schema"]["$ref"]
        target = "file://" + os.path.normpath(os.path.join(base, ref))
        return jsonschema.Draft7Validator({"$ref": target}, registry=self.registry,
                                          format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


class Raw:
    """Plain HTTP to /rest/ with token auth, for the checks the client libraries hide."""

    def __init__(self, base, user, password, api_key=None):
        self.base = base.rstrip("/")
        self.user, self.password, self.api_key = user, password, api_key

    def auth(self):
        if self.api_key:
            return {"apiKey": self.api_key}
        salt = "".join(random.choice(string.ascii_lowercase) for _ in range(12))
        token = hashlib.md5((self.password + salt).encode()).hexdigest()
        return {"u": self.user, "t": token, "s": salt}

    def call(self, endpoint, params=(), fmt="json", auth=True, post=False, view=False):
        pairs = list(params)
        if auth:
            pairs += list(self.auth().items())
        pairs += [("v", "1.16.1"), ("c", "check_subsonic")]
        if fmt:
            pairs.append(("f", fmt))
        url = f"{self.base}/rest/{endpoint}{'.view' if view else ''}"
        data = None
        if post:
            data = urllib.parse.urlencode(pairs).encode()
        else:
            url += "?" + urllib.parse.urlencode(pairs)
        request = urllib.request.Request(url, data=data)
        if post:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()

    def json(self, endpoint, params=(), **kwargs):
        status, headers, body = self.call(endpoint, params, **kwargs)
        return status, json.loads(body)["subsonic-response"], body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--user", default="admin")
    parser.add_argument("--password", default="secret")
    parser.add_argument("--api-key")
    parser.add_argument("--ids-out")
    parser.add_argument("--ids-only", action="store_true")
    parser.add_argument("--other-user", help="a second account: its stars, playlists and plays stay apart")
    parser.add_argument("--other-password")
    options = parser.parse_args()
    parsed = urllib.parse.urlparse(options.base)
    host = f"{parsed.scheme}://{parsed.hostname}"
    port = parsed.port
    raw = Raw(options.base, options.user, options.password, options.api_key)

    wait_for_library(raw)
    if options.ids_out:
        write_ids(raw, options.ids_out)
        if options.ids_only:
            print(f"{passed} passed, {failed} failed")
            return 1 if failed else 0

    spec = Spec(SPEC)
    protocol_checks(raw)
    ids = schema_checks(raw, spec)
    py_sonic_checks(host, port, options, ids, raw)
    py_opensonic_checks(host, port, options, ids)
    if options.other_user:
        users_apart_checks(raw, Raw(options.base, options.other_user, options.other_password), ids)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def wait_for_library(raw, seconds=60):
    """Until the first scan has listed something (getScanStatus: the status page is an admin's)."""
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        _, answer, _ = raw.json("getScanStatus")
        status = answer.get("scanStatus", {})
        if answer["status"] == "ok" and not status.get("scanning") and status.get("count", 0) > 0:
            return
        time.sleep(0.05)
    check("the library was scanned in time", False, answer)


def write_ids(raw, path):
    """Every song, album and artist id, keyed by tags (not paths: a moved folder keeps its keys)."""
    songs, albums, artists = {}, {}, {}
    offset = 0
    while True:
        _, answer, _ = raw.json("search3", [("query", ""), ("songCount", "500"), ("songOffset", str(offset)),
                                            ("albumCount", "500"), ("albumOffset", str(offset)),
                                            ("artistCount", "500"), ("artistOffset", str(offset))])
        result = answer.get("searchResult3", {})
        page = result.get("song", [])
        for song in page:
            songs[f"{song.get('artist')}|{song.get('album')}|{song.get('track')}|{song['title']}"] = song["id"]
        for album in result.get("album", []):
            albums[f"{album.get('artist')}|{album['name']}"] = album["id"]
        for artist in result.get("artist", []):
            artists[artist["name"]] = artist["id"]
        if len(page) < 500 and len(result.get("album", [])) < 500 and len(result.get("artist", [])) < 500:
            break
        offset += 500
    check("ids: every song listed by the empty search3", len(songs) > 0, f"{len(songs)} songs")
    with open(path, "w") as f:
        json.dump({"songs": songs, "albums": albums, "artists": artists}, f, sort_keys=True, indent=1)


def protocol_checks(raw):
    # XML by default, the namespace and the envelope's attributes.
    status, headers, body = raw.call("ping", fmt=None)
    root = ET.fromstring(body)
    check("ping: XML by default with the envelope", status == 200 and root.tag == "{http://subsonic.org/restapi}subsonic-response"
          and root.get("status") == "ok" and root.get("version") == "1.16.1" and root.get("type") == "streamd"
          and root.get("openSubsonic") == "true" and root.get("serverVersion"), body[:300])
    check("ping.view answers as ping", raw.call("ping", view=True)[0] == 200)
    _, answer, _ = raw.json("ping", post=True)
    check("ping: POST form", answer["status"] == "ok", answer)
    # jsonp with a checked callback.
    status, headers, body = raw.call("ping", [("callback", "app.onPing_1")], fmt="jsonp")
    check("jsonp: callback(json);", body.startswith(b"app.onPing_1(") and body.endswith(b");")
          and json.loads(body[len(b"app.onPing_1("):-2])["subsonic-response"]["status"] == "ok", body[:200])
    status, headers, body = raw.call("ping", [("callback", "alert(1)//")], fmt="jsonp")
    check("jsonp: a callback that is not an identifier is refused", b"alert" not in body and b"failed" in body, body[:200])
    # Errors: HTTP 200, status failed, the code.
    status, answer, _ = raw.json("getAlbum")
    check("missing parameter: 200, failed, code 10", status == 200 and answer["status"] == "failed" and answer["error"]["code"] == 10, answer)
    status, answer, _ = raw.json("getAlbum", [("id", "al-0000000000000000")])
    check("unknown id: code 70", status == 200 and answer["status"] == "failed" and answer["error"]["code"] == 70, answer)
    status, answer, _ = raw.json("getPodcasts")
    check("unimplemented endpoint: the error envelope, not a 404", status == 200 and answer["status"] == "failed"
          and answer["error"]["code"] in (0, 70), answer)
    status, answer, _ = raw.json("noSuchThing")
    check("unknown endpoint: the error envelope", status == 200 and answer["status"] == "failed", answer)
    # One-element lists are arrays in JSON.
    _, answer, _ = raw.json("getMusicFolders")
    folders = answer["musicFolders"]["musicFolder"]
    check("one music folder is a one-element array", isinstance(folders, list) and len(folders) == 1, answer)
    _, answer, _ = raw.json("getOpenSubsonicExtensions", auth=False)
    check("getOpenSubsonicExtensions without credentials", answer["status"] == "ok"
          and all(isinstance(e["versions"], list) for e in answer["openSubsonicExtensions"]), answer)


def schema_checks(raw, spec):
    """Calls each endpoint with f=json and validates its answer; returns ids for the client checks."""
    ids = {}

    def validate(endpoint, params=(), expect_ok=True, **kwargs):
        status, answer, body = raw.json(endpoint, params, **kwargs)
        document = json.loads(body)
        errors = sorted(spec.validator(endpoint).iter_errors(document), key=lambda e: list(e.path))
        ok = status == 200 and not errors and (answer["status"] == "ok") == expect_ok
        detail = "; ".join(f"{list(e.path)}: {e.message[:200]}" for e in errors[:3]) or json.dumps(answer)[:300]
        check(f"schema: {endpoint} {dict(params)}", ok, detail)
        return answer

    for endpoint in ["ping", "getLicense", "getMusicFolders", "getIndexes", "getArtists", "getGenres", "getScanStatus",
                     "getNowPlaying", "getStarred", "getStarred2", "getPlaylists"]:
        validate(endpoint)
    validate("getOpenSubsonicExtensions", auth=False)
    validate("getUser", [("username", raw.user)])
    answer = validate("getAlbumList2", [("type", "alphabeticalByName"), ("size", "500")])
    albums = answer.get("albumList2", {}).get("album", [])
    check("getAlbumList2 lists albums", len(albums) > 0)
    # The test library's tagged album (with a cover beside its tracks) first, when there is one.
    albums.sort(key=lambda a: a["name"] != "Ordered Album")
    for kind in ["random", "newest", "alphabeticalByArtist", "frequent", "recent", "starred", "highest"]:
        validate("getAlbumList2", [("type", kind)])
        validate("getAlbumList", [("type", kind)])
    validate("getAlbumList2", [("type", "byYear"), ("fromYear", "2030"), ("toYear", "1900")])
    validate("getAlbumList2", [("type", "byGenre"), ("genre", "Rock")])
    if not albums:
        return ids
    album = validate("getAlbum", [("id", albums[0]["id"])])["album"]
    songs = album.get("song", [])
    check("getAlbum lists its songs", len(songs) > 0 and all(s["albumId"] == album["id"] for s in songs))
    song = songs[0]
    ids.update(album=album["id"], song=song["id"], artist=album.get("artistId"), songs=[s["id"] for s in songs])
    validate("getSong", [("id", song["id"])])
    artist = validate("getArtist", [("id", album["artistId"])])["artist"]
    check("getArtist lists the album", any(a["id"] == album["id"] for a in artist.get("album", [])))
    validate("getMusicDirectory", [("id", album["artistId"])])
    validate("getMusicDirectory", [("id", album["id"])])
    validate("getMusicDirectory", [("id", "1")])
    validate("getRandomSongs", [("size", "5")])
    if song.get("genre"):
        validate("getSongsByGenre", [("genre", song["genre"])])
    validate("search3", [("query", song["title"].split()[0])])
    validate("search2", [("query", song["title"].split()[0])])
    answer = validate("search3", [("query", '""'), ("songCount", "1")])
    one = answer["searchResult3"].get("song")
    check("search3 songCount=1: an array of one", isinstance(one, list) and len(one) == 1, answer)
    validate("getLyricsBySongId", [("id", song["id"])])
    validate("getLyrics", [("artist", song.get("artist", "")), ("title", song["title"])])
    # Per-user data.
    validate("star", [("id", song["id"]), ("albumId", album["id"]), ("artistId", album["artistId"])])
    starred = validate("getStarred2")["starred2"]
    check("getStarred2 shows the starred song, album and artist",
          any(s["id"] == song["id"] for s in starred.get("song", [])) and any(a["id"] == album["id"] for a in starred.get("album", []))
          and any(a["id"] == album["artistId"] for a in starred.get("artist", [])), starred)
    validate("getStarred")
    validate("unstar", [("id", song["id"])])
    validate("setRating", [("id", song["id"]), ("rating", "4")])
    rated = validate("getSong", [("id", song["id"])])["song"]
    check("setRating: userRating 4", rated.get("userRating") == 4, rated)
    validate("scrobble", [("id", song["id"]), ("submission", "False")])
    playing = validate("getNowPlaying")["nowPlaying"]
    check("scrobble submission=False (a boolean in another case): now playing", any(e["id"] == song["id"] for e in playing.get("entry", [])), playing)
    before = rated.get("playCount", 0)
    validate("scrobble", [("id", song["id"]), ("submission", "TRUE")])
    after = validate("getSong", [("id", song["id"])])["song"]
    check("scrobble: play count +1", after.get("playCount") == before + 1, after)
    validate("savePlayQueue", [("id", s["id"]) for s in songs] + [("current", song["id"]), ("position", "1500")])
    queue = validate("getPlayQueue")["playQueue"]
    check("play queue saved and read back", queue.get("current") == song["id"] and queue.get("position") == 1500
          and [e["id"] for e in queue.get("entry", [])] == [s["id"] for s in songs], queue)
    created = validate("createPlaylist", [("name", "schema check")] + [("songId", s["id"]) for s in songs])["playlist"]
    validate("getPlaylist", [("id", created["id"])])
    validate("updatePlaylist", [("playlistId", created["id"]), ("songIndexToRemove", "0"), ("comment", "c"), ("public", "false")])
    validate("getPlaylists")
    validate("deletePlaylist", [("id", created["id"])])
    return ids


def users_apart_checks(first, second, ids):
    """What one user marks, lists and plays is theirs: the other sees none of it."""
    if not ids:
        return
    song, album = ids["song"], ids["album"]
    _, answer, _ = first.json("star", [("id", song), ("albumId", album)])
    check("apart: the first user stars", answer["status"] == "ok", answer)
    _, answer, _ = first.json("createPlaylist", [("name", "mine alone"), ("songId", song)])
    playlist = answer.get("playlist", {}).get("id")
    check("apart: the first user makes a playlist", answer["status"] == "ok" and playlist, answer)
    _, before, _ = second.json("getSong", [("id", song)])
    plays_before = before.get("song", {}).get("playCount", 0)
    for _ in range(2):
        first.json("scrobble", [("id", song)])
    _, mine, _ = first.json("getStarred2")
    check("apart: the first user's stars", any(s["id"] == song for s in mine["starred2"].get("song", [])), mine)
    _, theirs, _ = second.json("getStarred2")
    check("apart: the second user sees none of them", not theirs["starred2"].get("song") and not theirs["starred2"].get("album"), theirs)
    _, lists, _ = second.json("getPlaylists")
    check("apart: the second user does not list the first's private playlist",
          all(p["id"] != playlist for p in lists["playlists"].get("playlist", [])), lists)
    _, answer, _ = second.json("getPlaylist", [("id", playlist)])
    check("apart: nor read it by id (70)", answer["status"] == "failed" and answer["error"]["code"] == 70, answer)
    _, answer, _ = second.json("deletePlaylist", [("id", playlist)])
    check("apart: nor delete it", answer["status"] == "failed", answer)
    _, after, _ = second.json("getSong", [("id", song)])
    check("apart: the first user's plays are not the second's", after["song"].get("playCount", 0) == plays_before
          and "starred" not in after["song"], after)
    _, own, _ = first.json("getSong", [("id", song)])
    check("apart: the first user's play count moved", own["song"].get("playCount", 0) >= 2 and "starred" in own["song"], own)
    _, answer, _ = second.json("getUser", [("username", first.user)])
    check("apart: a normal user cannot read another's details (50)", answer["status"] == "failed" and answer["error"]["code"] == 50, answer)
    first.json("deletePlaylist", [("id", playlist)])
    first.json("unstar", [("id", song), ("albumId", album)])


def py_sonic_checks(host, port, options, ids, raw):
    if not ids:
        return
    # py-sonic's GET mode (useGET) calls Python 2's urllib2 and fails before sending anything
    # (py-sonic 1.x on Python 3): POST here; GET is py-opensonic's and the raw checks'.
    for legacy in (False, True):
        for use_get in (False,):
            label = f"py-sonic {'legacy' if legacy else 'token'} auth, {'GET' if use_get else 'POST'}"
            connection = libsonic.Connection(host, options.user, options.password, port=port, legacyAuth=legacy, useGET=use_get,
                                             appName="check_subsonic")
            attempt(f"{label}: ping", lambda: connection.ping() or (_ for _ in ()).throw(AssertionError("ping false")))
            album = attempt(f"{label}: getAlbum", lambda: connection.getAlbum(ids["album"]))
            if album:
                check(f"{label}: getAlbum's songs", [s["id"] for s in album["album"]["song"]] == ids["songs"])
            attempt(f"{label}: getArtists", lambda: connection.getArtists())
            attempt(f"{label}: search3", lambda: connection.search3("a"))
            attempt(f"{label}: star + unstar", lambda: (connection.star(sids=[ids["song"]]), connection.unstar(sids=[ids["song"]])))
            made = attempt(f"{label}: createPlaylist with several songIds", lambda: connection.createPlaylist(name=label, songIds=ids["songs"]))
            if made:
                playlist = made["playlist"]
                check(f"{label}: the playlist holds the songs in order", [e["id"] for e in playlist.get("entry", [])] == ids["songs"], playlist)
                attempt(f"{label}: deletePlaylist", lambda: connection.deletePlaylist(playlist["id"]))
            if not legacy:
                stream = attempt(f"{label}: stream", lambda: connection.stream(ids["song"]))
                if stream is not None:
                    data = stream.read()
                    check(f"{label}: stream sends the whole file", len(data) > 1000, len(data))
                cover = attempt(f"{label}: getCoverArt", lambda: connection.getCoverArt(ids["album"], size=64))
                if cover is not None:
                    head = cover.read(4)
                    check(f"{label}: getCoverArt is an image", head[:2] == b"\xff\xd8" or head == b"\x89PNG", head)
    # A wrong password: error 40 as HTTP 200 status=failed (only when the server has accounts).
    wrong = libsonic.Connection(host, options.user, options.password + "x", port=port)
    try:
        wrong.ping()
        check("py-sonic: a wrong password is refused", os.environ.get("SUBSONIC_OPEN") == "1", "accepted")
    except Exception as error:  # noqa: BLE001
        check("py-sonic: a wrong password is refused with code 40", "40" in str(getattr(error, "code", "")) or "Wrong" in str(error), error)


def py_opensonic_checks(host, port, options, ids):
    if not ids:
        return
    modes = [("token", dict(username=options.user, password=options.password)),
             ("token, GET", dict(username=options.user, password=options.password, use_get=True)),
             ("legacy", dict(username=options.user, password=options.password, legacy_auth=True))]
    if options.api_key:
        modes.append(("apiKey", dict(api_key=options.api_key)))
    for label, credentials in modes:
        connection = libopensonic.Connection(host, port=port, app_name="check_subsonic", **credentials)
        try:
            prefix = f"py-opensonic ({label})"
            attempt(f"{prefix}: ping", connection.ping)
            extensions = attempt(f"{prefix}: getOpenSubsonicExtensions", connection.get_open_subsonic_extensions)
            if extensions is not None:
                check(f"{prefix}: formPost is announced", any(e.name == "formPost" for e in extensions))
            album = attempt(f"{prefix}: get_album (typed)", lambda: connection.get_album(ids["album"]))
            if album is not None:
                check(f"{prefix}: album's songs typed", [s.id for s in album.song] == ids["songs"])
            attempt(f"{prefix}: get_artists (typed)", connection.get_artists)
            attempt(f"{prefix}: get_artist (typed)", lambda: connection.get_artist(ids["artist"]))
            attempt(f"{prefix}: get_song (typed)", lambda: connection.get_song(ids["song"]))
            attempt(f"{prefix}: get_album_list2 (typed)", lambda: connection.get_album_list2("newest", size=50))
            attempt(f"{prefix}: search3 (typed)", lambda: connection.search3("", song_count=50))
            attempt(f"{prefix}: get_genres (typed)", connection.get_genres)
            attempt(f"{prefix}: get_indexes (typed)", connection.get_indexes)
            attempt(f"{prefix}: get_music_directory (typed)", lambda: connection.get_music_directory(ids["album"]))
            attempt(f"{prefix}: get_random_songs (typed)", lambda: connection.get_random_songs(size=3))
            attempt(f"{prefix}: get_starred2 (typed)", connection.get_starred2)
            attempt(f"{prefix}: get_user (typed)", lambda: connection.get_user(options.user))
            # Not get_music_folders: py-opensonic 10.4 iterates the keys of `musicFolders` (the
            # spec's {"musicFolder": [...]}, which the schema check above validates) as folders.
            attempt(f"{prefix}: get_lyrics_by_song_id (typed)", lambda: connection.get_lyrics_by_song_id(ids["song"]))
            attempt(f"{prefix}: scrobble", lambda: connection.scrobble(ids["song"], submission=False))
            attempt(f"{prefix}: get_now_playing (typed)", connection.get_now_playing)
            attempt(f"{prefix}: save_play_queue", lambda: connection.save_play_queue(ids["songs"], current=ids["song"], position=10))
            attempt(f"{prefix}: get_play_queue (typed)", connection.get_play_queue)
            attempt(f"{prefix}: get_playlists (typed)", connection.get_playlists)
        finally:
            connection.cleanup()


if __name__ == "__main__":
    sys.exit(main())
