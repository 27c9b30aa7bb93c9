"""The surviving mutants that no test can kill, each with the line it changes and why.

A mutant is *equivalent* when the changed code behaves the same for every input its callers
can give (``None`` for ``False`` where the value is only ever tested for truth, a bound that
can never be reached …). Each entry: mutant name → (its changed line, as
``tools/mutation.py`` records it; the reason). The changed line is checked too, so when a
function changes and mutmut renumbers its mutants, a listed name that now points at another
change counts as untriaged again.
"""

from __future__ import annotations

_I = "benchlib.measure.stats._intervals."
_FLOAT64 = ("a record's times are pydantic float fields, and numpy makes an array of floats, "
            "or an empty one, float64 without being told")
_RNG_ONE = ("with one repeat, drawing it once with replacement gives it again, and numpy "
            "draws from a range of one without advancing the generator (checked): same "
            "values, same later draws")
_ERRSTATE = ("errstate only silences numpy's warning for a resample whose side is 0 or NaN; "
             "the draws are the same (inf or NaN, which _bounds drops)")

_FIRST_SET = ("read only where a choices event was seen, and the block that sees the "
              "first one sets it before any read: its starting value is never used")
_ONE_OVERHEAD = ("ordering the (served, own, out) tuples whole rather than by served picks a "
                 "body with the same served count, so the same verdict and count; only "
                 "which of equally long bodies the message splits into own and added "
                 "tokens may change, and the message names no body")
_STRICT_SAME = ("figures holds one entry per device, made from devices: zip's strictness never "
                "matters")
_M = "benchlib.measure.stats._metrics."
_SUCCESS = ("decode_capture, the only maker of outcomes, marks a request successful only "
            "after a choices event, where it sets ttft_ns, latency_ns, their lower bounds and "
            "ttft_text_ns (a text-free one copies ttft_ns): on a success none is None, so the "
            "`or` default (there for the type checker) is never taken")
_STRICT3 = "zip of the three columns with a tuple of three values: equal lengths always"
_NOT_STRICT = "strict=None or no strict is zip's default, strict=False"
_BUCKETS = ("every event lies at or before its request's end (ttft + Σ itl = latency), so "
            "no event or request reaches a bucket past int(last − first): buckets added "
            "after it stay 0 and neither maximum changes")
_NO_OK = ("the default is taken only when no request succeeded, and then the loop that "
          "reads first_start runs zero times")

_IMPORT_TIME = ("not equivalent, but out of mutmut's reach: _opt runs only while the class "
                "body is built at import, and mutmut switches a mutant on after import, in a "
                "forked worker, so no test can see it; what it makes (a None default and a "
                "description on every metric field) is checked by "
                "test_every_metric_field_is_optional")
_INF_SIGN = ("the value here is +inf or -inf (finite floats and NaN are handled before): any "
             "threshold in [0, 1] splits them alike")

_D = "benchlib.importers._detect."
_SEED_KEY = ("blocks never overlap and each spans several lines (a seed block: its rule, title, "
             "rule, five fields, rule), so no other block starts within two lines of a seed "
             "block's title, and moving its sort key by one or two lines keeps the file order")

EQUIVALENT: dict[str, tuple[str, str]] = {
    f"{_D}x_import_results__mutmut_13": (
        'text = raw.decode("UTF-8-SIG")', "Python's codec names are case-insensitive"),
    **{f"{_D}x__json__mutmut_{n}": (change, (
        "the 'the file: ' fallback is never taken: a document that reaches here starts with "
        "{ or [ (else it was read as a console log), so it is an object (no error) or a list, "
        "whose items' place is [i]; a JSON Lines document has its 'line N: '"))
       for n, change in (
           (15, "raise Malformed(f\"{at or 'XXthe file: XX'}expected a JSON object, found \""),
           (16, "raise Malformed(f\"{at or 'THE FILE: '}expected a JSON object, found \""))},
    **{f"{_D}x__build__mutmut_{n}": (change, (
        "every reader (vLLM's and SGLang's console and JSON, GuideLLM, AIPerf, seed 000) "
        "sets values['extra'] unconditionally before it returns, so the default is never "
        "taken")) for n, change in (
            (10, '"extra": clean(values.get("extra", None))}'),
            (12, '"extra": clean(values.get("extra", ))}'))},
    "benchlib.recipe._load.x_load_recipe__mutmut_12": (
        "data = yaml.safe_load(path.read_text(encoding=None))",
        "equivalent where the tests run (a UTF-8 locale: None reads as UTF-8 there); the "
        "explicit encoding matters only under another locale, which no test machine has"),
    "benchlib.recipe._load.x_load_recipe__mutmut_14": (
        'data = yaml.safe_load(path.read_text(encoding="UTF-8"))',
        "Python's codec names are case-insensitive"),
    f"{_D}x__console__mutmut_12": (
        "found += [(i - 1, values) for i, values in seed_results(lines)]", _SEED_KEY),
    f"{_D}x__console__mutmut_13": (
        "found += [(i + 2, values) for i, values in seed_results(lines)]", _SEED_KEY),
    f"{_D}x__console__mutmut_15": (
        "found.sort(key=None)",
        "no two blocks start on one line, so sorting the (line, values) pairs by the whole "
        "pair never compares the values and orders them as by the line"),
    "benchlib.importers._common.x__json_decimal__mutmut_4": (
        "return Decimal(value) if (isinstance(value, int)) and False else Decimal(repr(value))",
        "for an int (bool is refused before) repr is its exact decimal text, so "
        "Decimal(repr(n)) == Decimal(n)"),
    "benchlib.importers._common.x_clean__mutmut_13": (
        'return "nan" if math.isnan(value) else ("inf" if value >= 0 else "-inf")', _INF_SIGN),
    "benchlib.importers._common.x_clean__mutmut_14": (
        'return "nan" if math.isnan(value) else ("inf" if value > 1 else "-inf")', _INF_SIGN),
    "benchlib.importers._seed.x_seed_results__mutmut_3": (
        "i = 1",
        "line 0 cannot open a block (a title needs the rule on the line above it), so "
        "starting the scan at line 1 finds the same blocks"),
    **{f"benchlib.importers._model.x__opt__mutmut_{n}": (change, _IMPORT_TIME) for n, change in (
        (1, "return Field(None, description=None)"), (2, "return Field(description=description)"),
        (3, "return Field(None, )"))},
    f"{_M}x__stats__mutmut_3": (
        "arr = np.asarray(values_ms, dtype=None)",
        "every caller passes floats (ns / _MS), which numpy makes float64 unasked; an "
        "empty list too"),
    f"{_M}x__stats__mutmut_5": ("arr = np.asarray(values_ms, )",
                                "every caller passes floats (ns / _MS), which numpy makes "
                                "float64 unasked; an empty list too"),
    f"{_M}x__chunks_per_s__mutmut_6": (
        "if n < 2 or o.latency_ns is None and o.ttft_text_ns is None:", _SUCCESS),
    f"{_M}x__reference_peaks__mutmut_11": (
        "last = max(o.start_ns / _NS + (o.latency_ns or 1) / _NS for o in ok)", _SUCCESS),
    f"{_M}x__reference_peaks__mutmut_16": ("seconds = int(np.ceil(last + first)) + 1",
                                           _BUCKETS + " (first ≥ 0: a perf_counter time)"),
    f"{_M}x__reference_peaks__mutmut_17": ("seconds = int(np.ceil(last - first)) + 2",
                                           _BUCKETS),
    f"{_M}x__reference_peaks__mutmut_28": ("t = start + (o.ttft_ns or 1) / _NS", _SUCCESS),
    f"{_M}x__reference_peaks__mutmut_39": (
        "if 0 <= bucket <= seconds:",
        "an event's bucket is at most int(last − first) < seconds (every event lies at or "
        "before its request's end), so bucket == seconds never happens"),
    f"{_M}x__reference_peaks__mutmut_55": (
        "for s in range(int(start - first), int(start + (o.latency_ns or 1) / _NS - first) "
        "+ 1):", _SUCCESS),
    **{f"{_M}x__figure_bounds__mutmut_{n}": (
        f"for column, x in zip(out[metric], (value, lower, upper), {arg}):", _STRICT3)
       for n, arg in ((12, "strict=None"), (15, ""), (16, "strict=False"))},
    f"{_M}x__figure_bounds__mutmut_27": (
        "if o.ttft_ns is not None or ttft_lo is not None:",
        "ttft_lo falls back to ttft_ns, so it is None only when ttft_ns is; the `or` differs "
        "only for a lower bound without its value, which decode_capture never makes"),
    f"{_M}x__figure_bounds__mutmut_55": (
        "if o.latency_ns is not None or lat_lo is not None:",
        "lat_lo falls back to latency_ns, so it is None only when latency_ns is; the `or` "
        "differs only for a lower bound without its value, which decode_capture never makes"),
    f"{_M}x_summarize__mutmut_32": (
        "first_start = min((o.start_ns for o in ok), default=None)", _NO_OK),
    f"{_M}x_summarize__mutmut_35": (
        "first_start = min((o.start_ns for o in ok), default=1)", _NO_OK),
    f"{_M}x_summarize__mutmut_50": (
        "for t, c in zip(o.chunk_times_ns, counts, strict=None):", _NOT_STRICT),
    f"{_M}x_summarize__mutmut_53": ("for t, c in zip(o.chunk_times_ns, counts, ):",
                                    _NOT_STRICT),
    f"{_M}x_summarize__mutmut_57": (
        "bucket = int((t - first_start) / 1_000_000_000)",
        "t ≥ first_start, and int() of the non-negative float quotient truncates to the "
        "same whole second as // while the span is under ~50 days (a float's 2⁻⁵² of it "
        "stays under 1 ns)"),
    f"{_M}x_summarize__mutmut_94": (
        'good += (("ttft" not in goodput or (o.ttft_ns or 1) / _MS <= goodput["ttft"])',
        _SUCCESS),
    f"{_M}x_summarize__mutmut_111": (
        'and ("e2el" not in goodput or (o.latency_ns or 1) / _MS <= goodput["e2el"]))',
        _SUCCESS),
    f"{_M}x_summarize__mutmut_220": (
        "[((o.latency_ns or 1) + o.queue_ns) / _MS for o in ok],", _SUCCESS),
    f"{_M}x_summarize__mutmut_293": (
        "_peak_overlap([(o.start_ns, o.start_ns + (o.latency_ns or 1)) for o in ok])",
        _SUCCESS),
    **{f"{_I}xǁRepeatǁof__mutmut_{n}": (change, _FLOAT64) for n, change in (
        (27, "if r.ttft_first_choice_ms is not None], dtype=None),"),
        (29, "if r.ttft_first_choice_ms is not None], ),"),
        (32, "dtype=None),"), (34, "),"), (37, "tpot=np.array(tpot, dtype=None),"),
        (39, "tpot=np.array(tpot, ),"), (41, "dtype=None),"), (43, "),"),
        (46, "itl=[np.array(r.itl_ms, dtype=None) for r in ok],"),
        (48, "itl=[np.array(r.itl_ms, ) for r in ok],"))},
    f"{_I}xǁRepeatǁdrawn__mutmut_19": (
        "return arr[rng.integers(0, arr.size, arr.size)] if (arr.size) or True else arr",
        "indexing an empty array with an empty draw gives the empty array, and numpy draws "
        "nothing from the generator for it (checked)"),
    f"{_I}x_bootstrap__mutmut_11": (
        "chosen = [repeats[k] for k in rng.integers(0, n, n)] if (n > 1) or True "
        "else list(repeats)", _RNG_ONE),
    f"{_I}x_bootstrap__mutmut_19": (
        "chosen = [repeats[k] for k in rng.integers(0, n, n)] if n >= 1 else list(repeats)",
        _RNG_ONE),
    f"{_I}x_intervals_of__mutmut_27": (
        "bounds = _bounds(bootstrap(repeats, figure, rng, resamples)) if (value is not None) "
        "or True \\",
        "the value is None only when no repeat has any value of the figure; then every "
        "resample is NaN and _bounds gives None anyway"),
    **{f"{_I}x_ratio_interval__mutmut_{n}": (change, _ERRSTATE) for n, change in (
        (56, 'with np.errstate(divide=None, invalid="ignore"):'),
        (57, 'with np.errstate(divide="ignore", invalid=None):'),
        (58, 'with np.errstate(invalid="ignore"):'),
        (59, 'with np.errstate(divide="ignore", ):'))},
    f"{_I}x_ratio_interval__mutmut_80": (
        'why = _FEW_RUNS if FIGURES[figure][1] is None else "no interval: too few values"',
        "in FIGURES the metric is None exactly where the percentile is (output throughput)"),
    "benchlib.measure.wire._sse.xǁSSEDecoderǁfeed__mutmut_19": (
        "start = None",
        "bytes.find and slicing take None as 0, and start is 0 until the first line is read"),
    "benchlib.measure.wire._sse.xǁSSEDecoderǁfeed__mutmut_40": (
        'cr = buf.find(b"\\r", start, lf if (lf >= 0) or True else end)',
        "with no LF, the search ends at -1 (the last byte) instead of at the end: a CR that is "
        "the last byte is then not found, and the loop stops just as it does for a final CR"),
    "benchlib.measure.wire._limits.x_raise_open_file_limit__mutmut_8": (
        "if soft == resource.RLIM_INFINITY or soft > wanted:",
        "with soft == wanted the longer path sets new = min(wanted, hard) = soft, which is "
        "not above soft: the same soft limit returned, setrlimit not called"),
    # --- the memory plan (benchlib/memory/_layers.py, _weights.py, _overhead.py, _kv.py,
    # _plan.py) and the recipe's validation (benchlib/recipe/_schema.py) ---
    "benchlib.memory._layers.x_mixer_kinds__mutmut_33": (
        "return [_kind_of(ch, attn, None) for ch in pattern]",
        "a pattern string's items are single characters, and _kind_of reads its Mamba flag "
        "only for names holding 'linear' or equal to 'recurrent', which no one character is"),
    "benchlib.memory._layers.x__moe_at__mutmut_80": (
        "every = int(freq) if isinstance(freq, int) and freq > 1 else 1",
        "freq == 1 gives every = int(1) = 1 on the original line and 1 from the else: the same"),
    **{f"benchlib.memory._overhead.x__version__mutmut_{n}": (change, (
        "the fallback for a version that is no number is only compared with (0, 11), (0, 21) "
        "and (0, 26); (1, 32) and (0, 33) sort above all three as (0, 32) does: same era, "
        "same runner")) for n, change in ((8, "return (1, 32)"), (9, "return (0, 33)"))},
    **{f"benchlib.memory._overhead.x_forward_transient__mutmut_{n}": (change, (
        "the defaults only feed _mla_workspace_rows, and at 4096 / 1024 as at 4097 / 1025 "
        "max(8·L, 4·N·16) is past the 65536 cap, above N·16: the same 65536 rows"))
       for n, change in (
           (1, "def forward_transient(a: ModelArch, tokens: int, tp: int, *, max_model_len: "
               "int = 4097,"),
           (2, "seqs: int = 1025) -> int:"))},
    **{f"benchlib.memory._overhead.x_forward_transient__mutmut_{n}": (change, (
        "a term that is 0 or 1 (or 2·t·h for a model without a dense MLP) never wins the "
        "max(): the attention block, always there, is 2·t·(2h + …) > 2·t·h ≥ 1 for every "
        "t ≥ 1, and every caller passes t ≥ 1 (max_num_batched_tokens ≥ 1, PlanConfig)"))
       for n, change in (
           (8, "mlp = 2 * t * (h + (3 if a.gated_mlp else 2) * dense_i) if (dense_i) or True "
               "else 0"),
           (18, "mlp = 2 * t * (h + (3 if a.gated_mlp else 2) * dense_i) if dense_i else 1"),
           (20, "moe = 1"), (98, "rec = 1"))},
    "benchlib.memory._overhead.x_legacy_overhead__mutmut_28": (
        "max_num_batched_tokens=tokens, max_num_seqs=seqs, )",
        "Overhead.runner defaults to 'legacy', the value the dropped argument gave"),
    **{f"benchlib.memory._kv.x__dtype_bytes__mutmut_{n}": (change, (
        "the dtypes that reach this line are auto, bf16 and fp16 (fp8 and nvfp4 returned "
        "before, others raised): each is 2 bytes whether the float32 branch is taken or not"))
       for n, change in (
           (23, 'if kv_dtype == "auto" or model_dtype == "float32":'),
           (24, 'if kv_dtype != "auto" and model_dtype == "float32":'),
           (25, 'if kv_dtype == "XXautoXX" and model_dtype == "float32":'),
           (26, 'if kv_dtype == "AUTO" and model_dtype == "float32":'),
           (27, 'if kv_dtype == "auto" and model_dtype != "float32":'),
           (28, 'if kv_dtype == "auto" and model_dtype == "XXfloat32XX":'),
           (29, 'if kv_dtype == "auto" and model_dtype == "FLOAT32":'))},
    "benchlib.memory._kv.x_kv_layout__mutmut_19": (
        "b = _dtype_bytes(kv_cache_dtype, None)",
        "_dtype_bytes reads the model dtype only in its float32 branch, which returns the 2.0 "
        "every other path to its end returns too"),
    "benchlib.memory._kv.x_kv_layout__mutmut_44": (
        "mla_bytes = index_bytes = 1",
        "the start values are read only where a.mla is set (MLA layers exist only then, and "
        "the block raise reads them only for an MLA model), and there they are overwritten"),
    "benchlib.memory._kv.x_kv_layout__mutmut_191": (
        "layers.append(LayerCache(kind=kind, bytes_per_token=1, state_bytes=state,",
        "a linear-attention layer's bytes_per_token is read by nobody: the layout sums full "
        "and MLA layers', page_bytes and _attn_token_bytes skip state layers, and the one "
        "reader of every layer's (SGLang's pool) refuses linear-attention models"),
    "benchlib.memory._kv.x_kv_layout__mutmut_250": (
        "bytes_per_token=mla_bytes + (index_bytes if (own) or True else 0)))",
        "an MTP layer builds an indexer whenever the model has one (has_indexer is True past "
        "num_layers), and without one index_bytes is 0: the same sum either way"),
    "benchlib.memory._kv.x_kv_layout__mutmut_272": (
        "if state and (attn_bytes if (a.mla is None) or True else mla_bytes + index_bytes) "
        "and any(",
        "the value is only tested for truth, and both are ≥ 1: attn_bytes = int(2·max(1, "
        "kv_heads // tp)·head_dim·b) with b ≥ 0.5625, and an MLA latent is never empty"),
    "benchlib.memory._kv.xǁKVLayoutǁ_attn_token_bytes__mutmut_5": (
        "return next((x.bytes_per_token for x in self.layers if x.kind in _STATEFUL), 0)",
        "a state layer's page only enters kv_capacity's bucket key (state layers are bucketed "
        "by kind anyway) and max(page); the original page equals the first attention layer's "
        "own page, so 0 (a state layer's bytes per token) leaves the maximum unchanged"),
    "benchlib.memory._kv.x_kv_capacity__mutmut_8": (
        'one_type = len(kinds) == 1 and kinds < {"full", "mla"}',
        "with len(kinds) == 1, a one-element set is a subset of the two-element set exactly "
        "when it is a proper subset"),
    "benchlib.memory._kv.x_kv_capacity__mutmut_16": (
        "key = (layer.kind, layer.window, 1 if one_type else layout.page_bytes(layer),",
        "with one type the page in the key is the same constant for every layer (same "
        "buckets), and max(page) is read only in the other branch"),
    "benchlib.memory._kv.x_kv_capacity__mutmut_20": (
        '"XXXX" if one_type else layer.shape)',
        "with one type the shape in the key is the same constant for every layer: same buckets"),
    "benchlib.memory._kv.x_kv_capacity__mutmut_66": (
        "num_blocks = max(0, int(budget_bytes / bytes_per_block)) if bytes_per_block else 0",
        "bytes_per_block is a whole number ≥ 1 and budgets are byte counts far below 2**53: "
        "the float quotient is then at least 1/bytes_per_block from any whole number it is "
        "not, so truncating it gives the floor (negative budgets reach 0 through max either "
        "way; 2 million random budgets one ulp under a multiple agreed, checked)"),
    **{f"benchlib.memory._weights.x__role_of__mutmut_{n}": (change, (
        "every role test is a substring or re.search anywhere in the name, and none of their "
        "words holds 're:' or can start inside it: a leading 're:' left on changes no role"))
       for n, change in ((4, 'p = pattern.removesuffix("re:").lower()'),
                         (5, 'p = pattern.removeprefix("XXre:XX").lower()'),
                         (6, 'p = pattern.removeprefix("RE:").lower()'))},
    "benchlib.memory._weights.x__scheme__mutmut_53": (
        '"int4": _group_bytes(4, 128, 2, None), "awq": _group_bytes(4, 128, 2, True),',
        "_group_bytes only tests the zero flag for truth: None and False alike"),
    **{f"benchlib.memory._weights.x__scheme__mutmut_{n}": (change, (
        "with no quantized role (the set returned beside it is empty) the bytes per "
        "quantized parameter are read by nobody: weight_plan gives every role the base "
        "2.0, and the float-override line only runs for --weight-dtype bf16/fp16/fp32"))
       for n, change in ((138, "return dtype, 3.0, set(), set(), notes"),
                         (458, "return a.torch_dtype, 3.0, set(), set(), notes"))},
    **{f"benchlib.memory._weights.x__scheme__mutmut_{n}": (change, (
        "the default is taken only for an empty config_groups, which the `if groups` guard "
        "already maps to {}; a non-empty dict's first value never needs it"))
       for n, change in (
           (177, "g0: dict[str, Any] = next(iter(groups.values()), {}) if (groups) or True "
                 "else {}"),
           (179, "g0: dict[str, Any] = next(iter(groups.values()), None) if groups else {}"),
           (181, "g0: dict[str, Any] = next(iter(groups.values()), ) if groups else {}"))},
    **{f"benchlib.memory._weights.x__scheme__mutmut_{n}": (change, (
        "the weights' type is only compared with 'float': any other default is as much not "
        "'float' as 'int' is")) for n, change in (
            (200, 'kind = str(w.get("type", None))'), (202, 'kind = str(w.get("type", ))'),
            (205, 'kind = str(w.get("type", "XXintXX"))'),
            (206, 'kind = str(w.get("type", "INT"))'))},
    **{f"benchlib.memory._weights.x__scheme__mutmut_{n}": (change, (
        "the targets are only searched for 'expert' and 'shared', which no spelling of the "
        "default 'Linear' holds")) for n, change in (
            (226, 'tgt = [str(t).lower() for t in g0.get("targets", ["XXLinearXX"])]'),
            (227, 'tgt = [str(t).lower() for t in g0.get("targets", ["linear"])]'),
            (228, 'tgt = [str(t).lower() for t in g0.get("targets", ["LINEAR"])]'))},
    **{f"benchlib.memory._weights.x__scheme__mutmut_{n}": (change, (
        "bool() of None, as of no default at all, is False, the default written"))
       for n, change in ((425, 'dq = bool(q.get("bnb_4bit_use_double_quant", None))'),
                         (427, 'dq = bool(q.get("bnb_4bit_use_double_quant", ))'))},
    "benchlib.memory._weights.x__modelopt__mutmut_8": (
        'algo = str(q.get("quant_algo") or "XXXX").upper()',
        "an absent algorithm is then 'XXXX' instead of '': neither is FP8_PB_WO nor holds "
        "'FP8', so both take the NVFP4 path"),
    "benchlib.memory._weights.x__mxfp4_padding__mutmut_2": (
        "return 2.0",
        "weight_plan calls _mxfp4_padding only when a.moe is not None"),
    "benchlib.memory._weights.x__shard__mutmut_36": (
        'if role == "attention" and tp >= a.num_kv_heads:',
        "at tp == kv heads each rank keeps tp // kv = 1 copy: (n − kv)/tp + kv·1/tp = n/tp "
        "exactly; in floats the two can differ in the last bit only when tp is no power of "
        "two, and int() of the per-GPU total shows that only if it lies within an ulp (a "
        "millionth of a byte) of a whole byte (tp = 20 on GPT-2 large's 20 heads: equal, "
        "checked)"),
    **{f"benchlib.memory._weights.x_weight_plan__mutmut_{n}": (change, (
        "the base is 4.0 only for --weight-dtype fp32, and for fp32 the next line sets every "
        "role to the override's 4.0 anyway")) for n, change in (
            (42, 'base = 4.0 if (weight_dtype == "fp32") and False else 2.0'),
            (44, 'base = 5.0 if weight_dtype == "fp32" else 2.0'),
            (46, 'base = 4.0 if weight_dtype == "XXfp32XX" else 2.0'),
            (47, 'base = 4.0 if weight_dtype == "FP32" else 2.0'))},
    **{f"benchlib.memory._weights.x_weight_plan__mutmut_{n}": (change, (
        "for a float override nothing is quantized, so the line before already gives every "
        "role the base, which is the override's bytes (2.0 for bf16/fp16, 4.0 for fp32)"))
       for n, change in (
           (54, 'if weight_dtype in ("XXbf16XX", "fp16", "fp32"):'),
           (55, 'if weight_dtype in ("BF16", "fp16", "fp32"):'),
           (56, 'if weight_dtype in ("bf16", "XXfp16XX", "fp32"):'),
           (57, 'if weight_dtype in ("bf16", "FP16", "fp32"):'),
           (58, 'if weight_dtype in ("bf16", "fp16", "XXfp32XX"):'),
           (59, 'if weight_dtype in ("bf16", "fp16", "FP32"):'))},
    "benchlib.memory._weights.x__gguf_plan__mutmut_4": (
        "total = int(a.checkpoint_bytes or 1)",
        "weight_plan calls _gguf_plan only when a.checkpoint_bytes is set and not 0"),
    "benchlib.memory._weights.x__gguf_plan__mutmut_10": (
        "n = max(2, sum(params.by_role.values()))",
        "the sum counts at least the embeddings (vocab × hidden, millions): far above 2"),
    **{f"benchlib.memory._weights.x__gguf_plan__mutmut_{n}": (change, (
        "count_params' by_role has a key for every role, experts included (0 for a dense "
        "model): the default is never taken")) for n, change in (
            (48, 'experts_per_gpu_bytes=by_role.get("experts", None) // tp, '
                 'high_precision=["norm"],'),
            (50, 'experts_per_gpu_bytes=by_role.get("experts", ) // tp, '
                 'high_precision=["norm"],'),
            (53, 'experts_per_gpu_bytes=by_role.get("experts", 1) // tp, '
                 'high_precision=["norm"],'))},
    "benchlib.memory._plan.xǁPlanǁsummary__mutmut_116": (
        "cap.max_concurrency * (self.num_gpus / self.tp), 3) if cap else None,",
        "PlanConfig refuses a num_gpus that tp does not divide, so num_gpus / tp is the whole "
        "number num_gpus // tp is (as a float): the same product"),
    **{f"benchlib.memory._plan.x{fn}__mutmut_{n}": (change, (
        "the total parameter count is at least the embeddings' (millions): max(1, ·) and "
        "max(2, ·) are both the count")) for fn, n, change in (
            ("__with_mtp", 9,
             "extra = int(params.mtp * weights.total_bytes / max(2, params.total))"),
            ("_plan", 293,
             "mtp_gib = params.mtp * weights.total_bytes / max(2, params.total) / GIB / tp"))},
    **{f"benchlib.memory._plan.x_plan__mutmut_{n}": (change, (
        "weight_plan computes count_params(a) itself when given no breakdown: the same one "
        "plan() passes")) for n, change in (
            (73, "weights = weight_plan(a, tp=tp, weight_dtype=weight_dtype, params=None)"),
            (77, "weights = weight_plan(a, tp=tp, weight_dtype=weight_dtype, )"))},
    "benchlib.memory._plan.x_plan__mutmut_120": (
        "if draft is not None or cfg.draft_model is not None:",
        "draft is loaded exactly when cfg.draft_model is set (the line above), so the two "
        "tests are true together"),
    "benchlib.memory._plan.x__verdict__mutmut_11": (
        "if budget is None and capacity is None:",
        "plan() computes a capacity whenever the budget is not None, so the two are None "
        "together"),
    **{f"benchlib.recipe._schema.xǁRecipeǁvariant_recipes__mutmut_{n}": (change, (
        "model_copy keeps self.name already (the update set it to itself); the stray key "
        "lands in __dict__ as no field: model_dump, == and every reader of .name see the "
        "same recipe (checked)")) for n, change in (
            (27, '"assumptions": own, "XXnameXX": self.name,'),
            (28, '"assumptions": own, "NAME": self.name,'))},
    # --- the recipe's rules (benchlib/recipe/_rules.py) ---
    "benchlib.recipe._rules.x_check_engine__mutmut_41": (
        'spec.base_url or "XXXX").startswith("https://"):',
        "the default stands in for a missing base_url only to be asked whether it starts "
        "with https://: neither '' nor 'XXXX' does, so the rule refuses alike"),
    **{f"benchlib.recipe._rules.x_check_engine__mutmut_{n}": (change, (
        "strict=None and no strict are zip's default, strict=False")) for n, change in (
            (51, "for flag, value in zip(spec.args, spec.args[1:], strict=None):"),
            (54, "for flag, value in zip(spec.args, spec.args[1:], ):"))},
    **{f"benchlib.recipe._rules.x_check_engine__mutmut_{n}": (change, (
        "only the part before the first '=' is kept ([0]), and every maxsplit of at least 1, "
        "or none, cuts there alike")) for n, change in (
            (85, 'given = {a.split("=", )[0] for a in spec.args}'),
            (88, 'given = {a.split("=", 2)[0] for a in spec.args}'))},
    **{f"benchlib.recipe._rules.x_check_plan_keys__mutmut_{n}": (change, (
        "the PlanConfig is made only to validate the plan's other keys and then dropped; its "
        "model is a plain Path field that no validator reads (plan.model itself is refused "
        "just before), so any name there gives the same errors")) for n, change in (
            (13, 'PlanConfig(model=Path("XXconfig.jsonXX"), **recipe.plan)'),
            (14, 'PlanConfig(model=Path("CONFIG.JSON"), **recipe.plan)'))},
    # ---- measure's core: results/_result.py, wire/_timing.py, wire/_connection.py ----
    **{f"benchlib.measure.results._result.{name}": entry for name, entry in {
        **{f"x__stat__mutmut_{n}": (change, (
            "not equivalent, but out of mutmut's reach: _stat runs only while RunMetrics' "
            "class body is built at import, and mutmut switches a mutant on after import, in "
            "a forked worker, so no test can see it; the descriptions it makes are checked "
            "word for word by "
            "test_every_statistic_says_its_unit_and_that_it_is_null_without_a_success"))
           for n, change in ((1, '"XXwhen there is noneXX")'), (2, '"WHEN THERE IS NONE")'))},
        "xǁRunMetricsǁ_ordered__mutmut_19": (
            'if name.startswith("std_") or name.endswith("_ms"):',
            "callers pass only the models' own field names; of those, the only one the `or` "
            "adds whose name[4:-3] is a metric is max_itl_ms (checked over RunMetrics' and "
            "MeasureResult's fields), which comes after std_itl_ms, a required field: its "
            "percentile keys are already in the output, and setting a dict key again keeps "
            "its place and value"),
    }.items()},
    **{f"benchlib.measure.wire._timing.{name}": entry for name, entry in {
        "x__stepped__mutmut_6": (
            "span = max(1, (capture.end_ns or capture.start_ns) - capture.start_ns)",
            "differs only for a span of 0, where the limit becomes 1e6 + 0.0005 ns instead of "
            "1e6: the drift is a whole number of ns, and no whole number lies between them"),
        **{f"x_event_times__mutmut_{n}": (change, (
            "the three read columns always have one entry per read: Connection._on_readable, "
            "their only writer, appends to read_times, read_user and read_stamped together, "
            "and a capture without read_times takes the branch above; strict=None is "
            "strict=False, zip's default")) for n, change in (
                (53, "strict=None) if s]"), (57, ") if s]"), (58, "strict=False) if s]"))},
        **{name: (change, (
            "every caller passes Python floats (ms: a ns count divided by 1e6, in "
            "_figure_bounds and timing_summary), and numpy makes an array of floats float64 "
            "without being told")) for name, change in (
                ("x_figure_shares__mutmut_6",
                 "v, lo, hi = (np.asarray(x, dtype=None) for x in (values, lower, upper))"),
                ("x_figure_shares__mutmut_8",
                 "v, lo, hi = (np.asarray(x, ) for x in (values, lower, upper))"),
                ("x__pct__mutmut_9", "return float(np.percentile(np.asarray(values, "
                                     "dtype=None), p)) if values else None"),
                ("x__pct__mutmut_11",
                 "return float(np.percentile(np.asarray(values, ), p)) if values else None"))},
    }.items()},
    **{f"benchlib.measure.wire._connection.xǁConnectionǁ{name}": entry for name, entry in {
        **{name: (change, (
            "a dead store: the request state is None between requests only for clarity; "
            "stream sets _capture and _done before it registers the reader, their only other "
            "user, and the reader is unregistered at the request's end (_finish, close)"))
           for name, change in (
               ("__init____mutmut_14", 'self._capture: StreamCapture | None = ""'),
               ("__init____mutmut_15", 'self._done: asyncio.Future[None] | None = ""'),
               ("stream__mutmut_54", 'self._capture = ""'),
               ("stream__mutmut_55", 'self._done = ""'))},
        "hung_up__mutmut_7": (
            "self._sock.recv(2, socket.MSG_PEEK)",
            "a peek of 1 or of 2 bytes consumes nothing and tells alike: data for one byte or "
            "more, b'' at the end of the stream, or the same error"),
        "_finish__mutmut_2": (
            "if capture is not None or done is not None:",
            "_finish runs only from the reader, which runs only while a request is in flight: "
            "stream sets both _capture and _done before it registers the reader"),
        **{name: (change, (
            "not equivalent, but out of any test's reach: it differs only for a kernel stamp "
            "that maps to exactly the request's start, or to exactly the read's own "
            "perf_counter_ns, to the nanosecond; the kernel's stamp cannot be arranged so"))
           for name, change in (
               ("_on_readable__mutmut_24",
                "if self._tls is not None and arrival <= capture.start_ns:"),
               ("_on_readable__mutmut_34", "if not capture.start_ns < arrival <= now:  "
                                           "# bytes cannot arrive before the"),
               ("_on_readable__mutmut_35", "if not capture.start_ns <= arrival < now:  "
                                           "# bytes cannot arrive before the"))},
        "_read_error__mutmut_6": (
            'return f"cannot read the response: {type(None).__name__}: {exc}"',
            "the catch-all's words for an exception no input produces: over TCP h11 raises "
            "only RemoteProtocolError for what a server sends, the TLS channel only "
            "ssl.SSLError, the SSE decoder nothing (the arbitrary-bytes property tests of "
            "test_sse.py and test_tls.py find no other); it stays so that a read never leaves "
            "a request hanging"),
        "_feed_tls__mutmut_25": (
            "self._h11.receive_data(None)",
            "h11's receive_data takes any falsy data as the end of the stream "
            "(`if data: … else: closed`)"),
        "_feed_tls__mutmut_32": (
            "self._drain(capture, arrival, None)",
            "`read` only tags the events a drain appends, and the drain at the session's end "
            "appends none: every byte before the close_notify was fed and drained before it, "
            "and h11 hands out body bytes as they come, so only the response's end or h11's "
            "error comes out of it"),
        "_drain__mutmut_32": (
            'capture.content_type = value.decode("LATIN-1").lower()',
            "Python's codec names are case-insensitive"),
    }.items()},
    "benchlib.measure.server._spec.x__from_timings__mutmut_3": (
        "seen = None",
        "seen is only tested for truth (`if not seen`), and None is as false as False"),
    # --- a capture read into an outcome (benchlib/measure/wire/_decode.py) ---
    "benchlib.measure.wire._decode.x__error_message__mutmut_9": (
        'return body[:200].decode("UTF-8", "replace").strip()',
        "Python's codec names are case-insensitive"),
    **{f"benchlib.measure.wire._decode.x_decode_capture__mutmut_{n}": (change, why)
       for n, change, why in (
        (56, "last_choice_lower_ns = None", _FIRST_SET),
        (57, "last_choice_lower_ns = 1", _FIRST_SET),
        (58, "first_choice = None  # the event index of the first event with non-empty "
             "choices", _FIRST_SET),
        (59, "first_choice = +1  # the event index of the first event with non-empty choices",
         _FIRST_SET),
        (60, "first_choice = -2  # the event index of the first event with non-empty choices",
         _FIRST_SET))},
    "benchlib.measure.wire._decode.x_chunk_token_counts__mutmut_16": (
        'offsets = ""',
        "offsets is only tested for truth next (`if offsets:`), and '' is as false as None"),
    "benchlib.measure.wire._decode.x_chunk_token_counts__mutmut_36": (
        "counts[min(bisect.bisect_right(bounds, start), len(texts) + 1)] += 1",
        "a token of the generated text starts inside it, before bounds[-1] (its length), so "
        "bisect_right is at most len(texts) - 1 and neither clamp binds"),
    "benchlib.measure.wire._decode.x_chunk_token_counts__mutmut_48": (
        "per = outcome.output_tokens / len(texts) if (outcome.output_tokens) or True else 0.0"
        "  # never chunks",
        "with no output tokens, 0 / len(texts) is 0.0 (texts is not empty here)"),
    # --- --check's context fit (benchlib/pipeline/_fits.py) ---
    "benchlib.pipeline._fits.xǁContextFitǁ_chat__mutmut_7": (
        'template = self.template or getattr(self.tok, "chat_template", )',
        "every tokenizer the check is given (transformers', the byte-level stand-in) has a "
        "chat_template attribute, None where it has none, so the default is never taken"),
    "benchlib.pipeline._fits.xǁContextFitǁ_chat__mutmut_15": (
        "add_generation_prompt=True, tokenize=None)",
        "transformers' apply_chat_template tests tokenize for truth (`if not tokenize:`)"),
    **{f"benchlib.pipeline._fits.xǁContextFitǁcheck__mutmut_{n}": (change, _ONE_OVERHEAD)
       for n, change in (
        (11, "served, own, _ = max(counted, key=None)"),
        (13, "served, own, _ = max(counted, )"))},
    # --- a prompt set's shared prefixes (benchlib/measure/workload/_prefix_share.py) ---
    **{f"benchlib.measure.workload._prefix_share.x__common__mutmut_{n}": (change, _NOT_STRICT)
       for n, change in ((5, "for x, y in zip(a, b, strict=None):"),
                         (8, "for x, y in zip(a, b, ):"))},
    # --- energy from a device's samples (benchlib/energy/_core.py) ---
    "benchlib.energy._core.x_interpolate__mutmut_2": (
        "if t0 < t <= t1:",
        "a time equal to a pair's first point is the previous pair's last, or the first "
        "point itself, which the check after the loop returns: the same value"),
    **{f"benchlib.energy._core.x_counter_energy__mutmut_{n}": (change, (
        "with exactly two reads inside, inside[1] is inside[-1]: their difference is 0, "
        "the value the else gives"))
       for n, change in (
        (26, "low = points[inside[-1]][1] - points[inside[1]][1] if len(inside) > 2 else 0.0"),
        (27, "low = points[inside[-1]][1] - points[inside[1]][1] if len(inside) >= 3 "
             "else 0.0"))},
    **{f"benchlib.energy._core.x_integrated_energy__mutmut_{n}": (change, (
        "a power read exactly at an edge then appears twice, at the same time: a trapezoid "
        "of zero width, adding nothing"))
       for n, change in (
        (14, "inner = [(t, p) for t, p in points if window.start_s <= t < window.end_s]"),
        (15, "inner = [(t, p) for t, p in points if window.start_s < t <= window.end_s]"))},
    "benchlib.energy._core.x__one_device__mutmut_47": (
        "out.energy = Bracket(joules, None, None) if (joules is not None) or True else None",
        "a bracket whose estimate is None sums, divides and is reported as None, as no "
        "bracket is (_sum, _ratio and the device's row read its estimate)"),
    "benchlib.energy._core.x__peak__mutmut_8": (
        "if not inside and any(not pts for pts in series):",
        "without reads inside there are no pairs, and a device without counter points "
        "leaves every pair incomplete: either way no step, and None"),
    **{f"benchlib.energy._core.x_energy_figures__mutmut_{n}": (change, _STRICT_SAME)
       for n, change in (
        (88, "for k, (d, fig) in enumerate(zip(devices, figures, strict=None)):"),
        (91, "for k, (d, fig) in enumerate(zip(devices, figures, )):"),
        (92, "for k, (d, fig) in enumerate(zip(devices, figures, strict=False)):"))},
    # --- SGLang's memory plan (benchlib/memory/_sglang.py) ---
    "benchlib.memory._sglang.x_sglang_cell_bytes__mutmut_37": (
        'if a.sliding_window or a.count("sliding"):',
        "ModelArch.sliding_window is set only where some layer slides (_arch_read: None "
        "unless 'sliding' is among the layer kinds), so either test alone decides"),
    **{f"benchlib.memory._sglang.x_sglang_pool__mutmut_{n}": (change, (
        "a cell of 0 bytes cannot reach here: a model without KV layers is linear or Mamba "
        "throughout, which sglang_cell_bytes refuses first"))
       for n, change in (
        (65, "tokens = max(0, int(rest * GIB // cell)) // page_size * page_size if (cell) or "
             "True else 0"),
        (76, "tokens = max(0, int(rest * GIB // cell)) // page_size * page_size if cell "
             "else 1"))},
    "benchlib.memory._sglang.x_sglang_pool__mutmut_74": (
        "tokens = max(0, int(rest * GIB / cell)) // page_size * page_size if cell else 0",
        "for a positive quotient int() of the true division is its floor (a pool's bytes over "
        "a cell's stay far below 2**53); a negative one is clamped to 0 either way"),
    "benchlib.memory._sglang.x_parse_sglang_log__mutmut_49": (
        "if m.group(3) is not None:",
        "groups 2 and 3 (K size, V size) are one branch of the alternation: they match "
        "together or not at all"),
    "benchlib.memory._sglang.x_parse_sglang_log__mutmut_118": (
        'float(found["free_after_weights_gib"]) + float(found["weights_gib"]), 3)',
        "SGLang prints both figures to two decimals, so their sum rounds alike at two "
        "places or three"),
}
