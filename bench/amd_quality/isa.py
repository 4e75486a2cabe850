"""Reading AMD disassembly, shared by bench/amd_quality/compare.py (tl beside Triton) and
bench/compare_builds.py (two tl builds): one definition of what counts as an instruction.
No Triton import, so that the build comparison runs without it."""
import re


def instructions(text):
    """Mnemonics of the code in a disassembly (tl) or an amdgcn listing (Triton): lines
    that start with whitespace and a v_/s_/ds_/global_/buffer_/flat_/scratch_ word.
    Directives (.foo), labels, comments and the metadata block do not; s_code_end is
    the linker's padding after the kernel, not code."""
    text = text.split(".amdgpu_metadata")[0]
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s+((?:v|s|ds|global|buffer|flat|scratch)_[a-z0-9_]+)", line)
        if m and m.group(1) != "s_code_end":
            out.append(m.group(1))
    return out
