# ruff: noqa: E501  (the table keeps the layout of the file it stands for: one row a line)
"""The latency bench's reader of the NKI Library's published figures (bench/nki/library_latency.py),
on a test table written here in the library's layout: fields by the names its parameter string
gives, integer arithmetic evaluated, enum members and generator calls kept by name, rows without
a figure left out."""

import textwrap

import pytest

from bench.nki import library_latency

TABLE = textwrap.dedent(
    """
    class TestRmsNormQuant:
        rmsnorm_quant_lnc_params = "seqlen, quant_only, quant_type, tpbSgCyclesSum, tensor_gen, lower_bound, lnc_degree, batch, hidden"
        rmsnorm_quant_lnc_perms = [
            (128 // 64, True, QuantizationType.ROW, 1_000_000, gaussian_tensor_generator(), 0.0, 2, 1, 4096),
            (160, False, QuantizationType.ROW, 2 * 3, duplicate_row_rmsnorm_inp_generator(all_ones=True), 0.5, 2, 1, 8192),
            (160, False, QuantizationType.STATIC, None, gaussian_tensor_generator(), 0.0, 2, 1, 8192),
        ]
    """
)


def write_table(tmp_path, text):
    path = tmp_path / library_latency.TEST_FILE
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return tmp_path


def test_reads_the_rows_with_a_figure(tmp_path):
    rows = library_latency.published_configurations(write_table(tmp_path, TABLE))
    assert len(rows) == 2
    first, second = rows
    assert first["seqlen"] == 2 and first["quant_only"] is True
    assert first["tpbSgCyclesSum"] == 1_000_000 and first["hidden"] == 4096
    assert second["tpbSgCyclesSum"] == 6 and second["lower_bound"] == 0.5
    assert str(second["quant_type"]) == "QuantizationType.ROW"
    assert library_latency.describe(first) == (
        "B=1 S=2 H=4096 quant only row lower_bound=0.0 LNC2 gaussian"
    )
    assert library_latency.describe(second).endswith("duplicate_row (ones)")


def test_a_field_it_cannot_read_is_an_error_naming_it(tmp_path):
    table = TABLE.replace("128 // 64", "sizes[0]")
    with pytest.raises(ValueError, match=r"sizes\[0\]"):
        library_latency.published_configurations(write_table(tmp_path, table))
