from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file that cannot be read as Python source: no permission, binary content, or bytes
    that do not decode in the file's declared encoding (UTF-8 unless a PEP 263 coding cookie or a
    BOM says otherwise). Also a file torchlint cannot check within its limits: not a regular file
    (a FIFO or a device), larger than 4 MB (a notebook: 50 MB), taking more than 30 seconds of CPU
    time, crashing the parser, or valid Python (CPython accepts it) that libcst cannot parse, such
    as thousands of strings concatenated (see [Checking code you do not trust](../untrusted-code.md)).

    ## Why is this bad?
    The file cannot be checked at all; in the first cases Python would refuse to import it too.

    ## Example
    ```python
    # -*- coding: utf-8 -*-
    name = "caf\xe9"  # saved as Latin-1 bytes
    ```

    ## Use instead
    Save the file as UTF-8, or declare its real encoding with a coding cookie:
    ```python
    # -*- coding: latin-1 -*-
    ```

    This finding cannot be suppressed with `# noqa`.
    """

    code = "TL902"
    name = "unreadable-file"
    summary = "The file cannot be read as Python source"
    severity = Severity.ERROR
