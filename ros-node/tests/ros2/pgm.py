"""Reading a binary PGM (P5) photo: what the probes of both venvs share (the rclpy probes here
and the Cyclone DDS peer, tests/peer/peer.py). No third-party import."""


def read_pgm(path):
    """(width, height, pixels) of the 8-bit binary PGM at `path`; `pixels` is `bytes`, row-major."""
    with open(path, "rb") as f:
        data = f.read()
    fields, i = [], 0
    while len(fields) < 4:
        while data[i:i + 1].isspace():
            i += 1
        if data[i:i + 1] == b"#":
            i = data.index(b"\n", i)
            continue
        start = i
        while not data[i:i + 1].isspace():
            i += 1
        fields.append(data[start:i])
    assert fields[0] == b"P5", "binary PGM expected"
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[i + 1:i + 1 + w * h]
