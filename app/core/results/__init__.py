"""Typed results of every job (docs/architecture.md, "Results"): read once from the job's JSON, then attributes."""

from app.core.results.batch import BatchCell, BatchSummary, CellJob, EvalShardResult, FailedJob, JobCounts, JobRecord
from app.core.results.by_kind import RESULT_TYPES, JobResultType, read_job_result
from app.core.results.common import FloorEntry, JobDoc, Placement, RandomOp, RandomOps
from app.core.results.compare import (
    AnswerPictures,
    Answers,
    CandidateResult,
    CompareResult,
    KindInfo,
    OutputAnswers,
    OutputResult,
    PlotData,
    SampleFacts,
    Task,
    TextPair,
    ValueHists,
)
from app.core.results.diff import ChangedNode, DiffCounts, DiffNode, DiffResult, MatchedOutput, NumericDiff
from app.core.results.evaluation import (
    ClassMapInfo,
    DatasetInfo,
    EvalCandidate,
    EvalRun,
    EvaluationResult,
    PresetInfo,
    WorstImage,
)
from app.core.results.imports import ImportComparison, ImportedLayer, ImportedNodeChange, ImportResult, KitResult
from app.core.results.jobs import (
    BenchResult,
    BuildResult,
    DiagnosedOutput,
    DiagnoseResult,
    EngineLayer,
    FallbackResult,
    FallbackStep,
    LatencyStats,
    LayerError,
    LayerTiming,
    NodeDelta,
    OpCount,
    ParseError,
    PlanMismatch,
    ProfileDelta,
    ProfiledNode,
    ProfileResult,
    RunOutput,
    RunResult,
    VariantResult,
)
from app.core.results.record import JSONValue, Record, ResultFormatError
from app.core.results.speed import SweepKnee, SweepPoint, SweepResult, TuneResult, TuneTrial

__all__ = ["RESULT_TYPES", "AnswerPictures", "Answers", "BatchCell", "BatchSummary", "BenchResult", "BuildResult",
           "CandidateResult", "CellJob", "ChangedNode", "ClassMapInfo", "CompareResult", "DatasetInfo",
           "DiagnoseResult", "DiagnosedOutput", "DiffCounts", "DiffNode", "DiffResult", "EngineLayer",
           "EvalCandidate", "EvalRun", "EvalShardResult", "EvaluationResult", "FailedJob", "FallbackResult",
           "FallbackStep",
           "FloorEntry", "ImportComparison", "ImportResult", "ImportedLayer", "ImportedNodeChange", "JSONValue",
           "JobCounts", "JobDoc", "JobRecord",
           "JobResultType", "KindInfo", "KitResult", "LatencyStats",
           "LayerError", "LayerTiming", "MatchedOutput", "NodeDelta", "NumericDiff", "OpCount", "OutputAnswers",
           "OutputResult", "ParseError", "Placement", "PlanMismatch", "PlotData", "PresetInfo", "ProfileDelta",
           "ProfileResult", "ProfiledNode", "RandomOp", "RandomOps", "Record", "ResultFormatError", "RunOutput",
           "RunResult", "SampleFacts", "SweepKnee", "SweepPoint", "SweepResult", "Task", "TextPair", "TuneResult",
           "TuneTrial", "ValueHists", "VariantResult", "WorstImage",
           "read_job_result"]
