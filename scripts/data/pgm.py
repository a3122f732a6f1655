"""Binary PGM (P5, 8-bit) reading shared by the data scripts and the fuzz seed writer. Pure
Python, so that they run without PIL or numpy."""


def read_pgm(path):
    """(width, height, pixels) of the 8-bit binary PGM at `path`; `#` comments are allowed
    between the header fields."""
    data = open(path, "rb").read()
    assert data[:2] == b"P5", path
    fields, at = [], 2
    while len(fields) < 3:
        while data[at:at + 1].isspace():
            at += 1
        if data[at:at + 1] == b"#":
            at = data.index(b"\n", at) + 1
            continue
        start = at
        while data[at:at + 1].isdigit():
            at += 1
        fields.append(int(data[start:at]))
    w, h, maxval = fields
    assert maxval == 255, path
    # One whitespace byte separates the header from the pixels.
    return w, h, data[at + 1:at + 1 + w * h]
