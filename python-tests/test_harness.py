"""The module loads into a real server and is visible to a Redis user."""


def test_module_is_listed(r):
    names = [entry[b"name"] for entry in r.module_list()]
    assert b"dreamtown" in names


def test_commands_are_documented(r):
    # redis-py parses COMMAND replies as COMMAND INFO; take DOCS raw.
    r.set_response_callback("COMMAND", lambda response, **options: response)
    docs = r.execute_command("COMMAND", "DOCS", "DREAMS.FIRE")
    fields = docs[b"DREAMS.FIRE"]
    assert fields[b"module"] == b"dreamtown"
    assert b"fire" in fields[b"summary"].lower()
