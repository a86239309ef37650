/*
 * test_jobspec.c - the job spec: a table of specs with the problems each
 * must report, then the normal form (defaults, preset expansion, fallback
 * ladders) and the C values the scheduler reads.
 *
 * Table rows write JSON with single quotes for readability; they become
 * double quotes before parsing. A row is either a whole document (base NULL)
 * or a JSON merge patch (RFC 7386) over a base spec, where null deletes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec.h"

/* The founding example: gpt2-350m over 8 nodes of 8 GPUs, dp8 x tp4 x pp2, ZeRO-3. */
#define FOUNDING                                                                                   \
	"{'name': 'gpt2-350m dp8 tp4 pp2', 'model': {'preset': 'gpt2-350m'},"                      \
	" 'data': {'train': 'owt/train_*.bin', 'val': 'owt/val.bin'},"                             \
	" 'parallel': {'data_parallel': 8, 'tensor_parallel': 4, 'pipeline_parallel': 2,"          \
	"  'zero_stage': 3, 'micro_batch': 4, 'global_batch': 256},"                               \
	" 'resources': {'nodes': 8, 'gpus_per_node': 8},"                                          \
	" 'training': {'steps': 10000, 'precision': 'bf16'}}"

/* The smallest CPU job: one rank, every optional field left out. */
#define TINY                                                                                       \
	"{'name': 'tiny demo', 'model': {'preset': 'tiny'},"                                       \
	" 'data': {'train': 'tiny/*.bin'},"                                                        \
	" 'parallel': {'micro_batch': 4, 'global_batch': 8}, 'resources': {'nodes': 1},"           \
	" 'training': {'steps': 50}}"

/* Layouts for fallback ladders under FOUNDING (heads 16, layers 24, micro 4, global 256). */
#define L(dp, tp, pp)                                                                              \
	"{'data_parallel': " #dp ", 'tensor_parallel': " #tp ", 'pipeline_parallel': " #pp "}"
#define FALLBACK(list) "{'fault_tolerance': {'fallback': [" list "]}}"
/* Seven valid layouts, each smaller than the one before. */
#define LADDER7                                                                                    \
	L(4, 4, 3)                                                                                 \
	"," L(4, 4, 2) "," L(2, 4, 3) "," L(2, 4, 2) "," L(1, 4, 3) "," L(1, 4, 2) "," L(1, 2, 3)

#define A8    "aaaaaaaa"
#define A64   A8 A8 A8 A8 A8 A8 A8 A8
#define A512  A64 A64 A64 A64 A64 A64 A64 A64
#define A4096 A512 A512 A512 A512 A512 A512 A512 A512
/* A data path of 4096 bytes: 17 components of 240 bytes, 16 slashes. */
#define C240  A64 A64 A64 A8 A8 A8 A8 A8 A8
#define C240S C240 "/"
#define P4096                                                                                      \
	C240S C240S C240S C240S C240S C240S C240S C240S C240S C240S C240S C240S C240S C240S C240S  \
	    C240S C240
#define A255 A64 A64 A64 A8 A8 A8 A8 A8 A8 A8 "aaaaaaa"
#define E1   "\xc3\xa9" /* U+00E9, two bytes */
#define E8   E1 E1 E1 E1 E1 E1 E1 E1
#define E128 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8 E8

/* A command job: the team's own program from a code bundle, on 2 nodes x 2 ranks. */
#define CMD                                                                                        \
	"{'name': 'own ddp', 'kind': 'command', 'code': 'trainer@3',"                              \
	" 'command': ['python3', '-u', 'train.py', '--steps', '20'],"                              \
	" 'resources': {'nodes': 2, 'ranks_per_node': 2}}"

#define OK0 0
#define BAD (-ERR_VALIDATION_FAILED)

static const jsonx_limits limits = {16, 256};

static const quota_limits q_roomy = {1024, 10, 1000000, 0};
static const quota_limits q_exact = {64, 1, 64, 0}; /* FOUNDING: 64 GPUs x 60 minutes */
static const quota_limits q_few_gpus = {63, 10, 1000000, 0};
static const quota_limits q_no_jobs = {1024, 0, 1000000, 0};
static const quota_limits q_few_hours = {1024, 10, 63, 0};
static const quota_limits q_nothing = {63, 0, 63, 0};
static const quota_limits q_three_devices = {3, 10, 1000, 0};
static const quota_limits q_no_hours = {1024, 10, 0, 0};

typedef struct expect {
	const char *pointer, *code;
} expect;

typedef struct spec_case {
	const char *name;
	const char *base; /* NULL: json is the whole document */
	const char *json;
	const quota_limits *quota;
	int rc;
	expect want[10]; /* exactly these rows, in any order */
} spec_case;

static const spec_case cases[] = {
    /* valid specs */
    {"founding dp8 x tp4 x pp2 ZeRO-3 validates", FOUNDING, "{}", NULL, OK0, {{0}}},
    {"tiny CPU job validates", TINY, "{}", NULL, OK0, {{0}}},
    {"explicit model without preset",
     TINY,
     "{'model': {'preset': null, 'layers': 4, 'd_model': 128, 'heads': 8, 'vocab_size': 1000,"
     " 'seq_len': 128}}",
     NULL,
     OK0,
     {{0}}},
    {"preset field overridden",
     FOUNDING,
     "{'model': {'seq_len': 2048, 'layers': 12}}",
     NULL,
     OK0,
     {{0}}},
    {"null counts as absent",
     NULL,
     "{'name': 'n', 'model': {'preset': 'tiny', 'layers': null},"
     " 'data': {'train': 'x', 'val': null},"
     " 'parallel': {'data_parallel': null, 'micro_batch': 4, 'global_batch': 8},"
     " 'resources': {'nodes': 1, 'partition': null}, 'training': {'steps': 5, 'lr': null},"
     " 'checkpoint': null, 'fault_tolerance': {'fallback': null}}",
     NULL,
     OK0,
     {{0}}},
    {"upper bounds accepted",
     TINY,
     "{'training': {'steps': 100000000, 'warmup_steps': 100000000, 'lr': 10, 'grad_clip': 1000000,"
     " 'weight_decay': 10, 'seed': 9007199254740992, 'schedule': 'constant', 'precision': 'fp16'},"
     " 'checkpoint': {'every_steps': 100000000, 'keep': 1000},"
     " 'resources': {'time_limit_minutes': 525600},"
     " 'fault_tolerance': {'max_restarts': 100, 'heartbeat_timeout_s': 86400},"
     " 'parallel': {'zero_stage': 3}}",
     NULL,
     OK0,
     {{0}}},
    {"lower bounds accepted",
     TINY,
     "{'training': {'steps': 1, 'warmup_steps': 0, 'lr': 1e-9, 'grad_clip': 0, 'weight_decay': 0,"
     " 'seed': 0, 'schedule': 'linear'}, 'checkpoint': {'every_steps': 1, 'keep': 1},"
     " 'resources': {'time_limit_minutes': 1},"
     " 'fault_tolerance': {'max_restarts': 0, 'heartbeat_timeout_s': 10},"
     " 'parallel': {'global_batch': 4}}",
     NULL,
     OK0,
     {{0}}},
    {"warmup and checkpoint interval equal to steps",
     TINY,
     "{'training': {'warmup_steps': 50}, 'checkpoint': {'every_steps': 50}}",
     NULL,
     OK0,
     {{0}}},
    {"CPU ranks per node",
     TINY,
     "{'parallel': {'data_parallel': 8, 'global_batch': 64},"
     " 'resources': {'nodes': 2, 'ranks_per_node': 4}}",
     NULL,
     OK0,
     {{0}}},
    {"ranks_per_node equal to gpus_per_node",
     FOUNDING,
     "{'resources': {'ranks_per_node': 8}}",
     NULL,
     OK0,
     {{0}}},
    {"partition with every allowed character",
     TINY,
     "{'resources': {'partition': 'gpu-A100_x.1'}}",
     NULL,
     OK0,
     {{0}}},
    {"name of 128 two-byte characters", TINY, "{'name': '" E128 "'}", NULL, OK0, {{0}}},
    {"train path of 4096 bytes", TINY, "{'data': {'train': '" P4096 "'}}", NULL, OK0, {{0}}},
    {"data path components of 255 bytes",
     TINY,
     "{'data': {'train': '" A255 "/" A255 "', 'val': 'v/" A255 "'}}",
     NULL,
     OK0,
     {{0}}},
    {"data paths with a pattern in the last component",
     TINY,
     "{'data': {'train': 'a/b/c[0-9]?.bin', 'val': 'val_*.bin'}}",
     NULL,
     OK0,
     {{0}}},
    {"data path components that only start with dots",
     TINY,
     "{'data': {'train': '.hidden/..x/x..', 'val': '...'}}",
     NULL,
     OK0,
     {{0}}},
    {"grad_accum given and right", FOUNDING, "{'parallel': {'grad_accum': 8}}", NULL, OK0, {{0}}},
    {"fallback ladder",
     FOUNDING,
     FALLBACK(L(4, 4, 2) "," L(2, 4, 2) ", {'data_parallel': 1, 'tensor_parallel': 4,"
                                        " 'pipeline_parallel': 2, 'zero_stage': 1}"),
     NULL,
     OK0,
     {{0}}},
    {"fallback auto", FOUNDING, "{'fault_tolerance': {'fallback': 'auto'}}", NULL, OK0, {{0}}},
    {"fallback empty: never shrink", FOUNDING, FALLBACK(""), NULL, OK0, {{0}}},
    {"eight fallbacks", FOUNDING, FALLBACK(LADDER7 "," L(1, 1, 1)), NULL, OK0, {{0}}},
    {"quota with room", FOUNDING, "{}", &q_roomy, OK0, {{0}}},
    {"quota fits exactly", FOUNDING, "{}", &q_exact, OK0, {{0}}},

    /* structure and unknown fields */
    {"root must be an object", NULL, "[]", NULL, BAD, {{"", "wrong_type"}}},
    {"empty object: every required section",
     NULL,
     "{}",
     NULL,
     BAD,
     {{"/name", "required"},
      {"/model", "required"},
      {"/data", "required"},
      {"/parallel", "required"},
      {"/resources", "required"},
      {"/training", "required"}}},
    {"mass assignment refused",
     FOUNDING,
     "{'tenant': 't', 'state': 'running', 'submitter': 'u', 'id': '1'}",
     NULL,
     BAD,
     {{"/tenant", "unknown_field"},
      {"/state", "unknown_field"},
      {"/submitter", "unknown_field"},
      {"/id", "unknown_field"}}},
    {"unknown nested fields",
     FOUNDING,
     "{'model': {'dropout': 0.1}, 'data': {'test': 'x'}, 'parallel': {'sequence_parallel': 2},"
     " 'resources': {'tenant': 'x'}, 'training': {'state': 'done'}, 'checkpoint': {'dir': '/x'},"
     " 'fault_tolerance': {'retries': 1}}",
     NULL,
     BAD,
     {{"/model/dropout", "unknown_field"},
      {"/data/test", "unknown_field"},
      {"/parallel/sequence_parallel", "unknown_field"},
      {"/resources/tenant", "unknown_field"},
      {"/training/state", "unknown_field"},
      {"/checkpoint/dir", "unknown_field"},
      {"/fault_tolerance/retries", "unknown_field"}}},
    {"unknown field name escaped in pointer",
     FOUNDING,
     "{'model': {'a/b~c': 1}}",
     NULL,
     BAD,
     {{"/model/a~1b~0c", "unknown_field"}}},
    {"unknown field in a fallback entry",
     FOUNDING,
     FALLBACK("{'data_parallel': 4, 'tensor_parallel': 4, 'pipeline_parallel': 2, 'nodes': 4,"
              " 'global_batch': 128}"),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/nodes", "unknown_field"},
      {"/fault_tolerance/fallback/0/global_batch", "unknown_field"}}},
    {"sections of the wrong type",
     FOUNDING,
     "{'model': 'gpt2', 'data': ['x'], 'parallel': 1, 'resources': true, 'training': 'fast',"
     " 'checkpoint': 5, 'fault_tolerance': 'yes'}",
     NULL,
     BAD,
     {{"/model", "wrong_type"},
      {"/data", "wrong_type"},
      {"/parallel", "wrong_type"},
      {"/resources", "wrong_type"},
      {"/training", "wrong_type"},
      {"/checkpoint", "wrong_type"},
      {"/fault_tolerance", "wrong_type"}}},

    /* name */
    {"name missing", FOUNDING, "{'name': null}", NULL, BAD, {{"/name", "required"}}},
    {"name empty", FOUNDING, "{'name': ''}", NULL, BAD, {{"/name", "invalid_value"}}},
    {"name of 129 characters",
     FOUNDING,
     "{'name': '" E128 "a'}",
     NULL,
     BAD,
     {{"/name", "invalid_value"}}},
    {"name with a newline", FOUNDING, "{'name': 'a\\nb'}", NULL, BAD, {{"/name", "invalid_value"}}},
    {"name with DEL", FOUNDING, "{'name': 'a\\u007fb'}", NULL, BAD, {{"/name", "invalid_value"}}},
    {"name with a C1 control",
     FOUNDING,
     "{'name': 'a\\u0085b'}",
     NULL,
     BAD,
     {{"/name", "invalid_value"}}},
    {"name of the wrong type", FOUNDING, "{'name': 42}", NULL, BAD, {{"/name", "wrong_type"}}},

    /* model */
    {"unknown preset",
     FOUNDING,
     "{'model': {'preset': 'gpt5'}}",
     NULL,
     BAD,
     {{"/model/preset", "unknown_preset"}}},
    {"unknown preset, explicit fields still checked",
     FOUNDING,
     "{'model': {'preset': 'llama', 'layers': 0}}",
     NULL,
     BAD,
     {{"/model/preset", "unknown_preset"}, {"/model/layers", "out_of_range"}}},
    {"preset of the wrong type",
     FOUNDING,
     "{'model': {'preset': 7}}",
     NULL,
     BAD,
     {{"/model/preset", "wrong_type"}}},
    {"preset empty",
     FOUNDING,
     "{'model': {'preset': ''}}",
     NULL,
     BAD,
     {{"/model/preset", "unknown_preset"}}},
    {"explicit model needs every field",
     TINY,
     "{'model': {'preset': null, 'layers': 2}}",
     NULL,
     BAD,
     {{"/model/d_model", "required"},
      {"/model/heads", "required"},
      {"/model/vocab_size", "required"},
      {"/model/seq_len", "required"}}},
    {"model fields out of range",
     FOUNDING,
     "{'model': {'layers': 0, 'd_model': 65537, 'heads': 1025, 'vocab_size': 1,"
     " 'seq_len': 1048577}}",
     NULL,
     BAD,
     {{"/model/layers", "out_of_range"},
      {"/model/d_model", "out_of_range"},
      {"/model/heads", "out_of_range"},
      {"/model/vocab_size", "out_of_range"},
      {"/model/seq_len", "out_of_range"}}},
    {"model fields too big",
     FOUNDING,
     "{'model': {'layers': 1025, 'vocab_size': 1048577}}",
     NULL,
     BAD,
     {{"/model/layers", "out_of_range"}, {"/model/vocab_size", "out_of_range"}}},
    {"model fields of the wrong type",
     FOUNDING,
     "{'model': {'layers': '24', 'd_model': 1024.0, 'heads': true}}",
     NULL,
     BAD,
     {{"/model/layers", "wrong_type"},
      {"/model/d_model", "wrong_type"},
      {"/model/heads", "wrong_type"}}},

    /* data */
    {"train missing",
     FOUNDING,
     "{'data': {'train': null}}",
     NULL,
     BAD,
     {{"/data/train", "required"}}},
    {"train empty",
     FOUNDING,
     "{'data': {'train': ''}}",
     NULL,
     BAD,
     {{"/data/train", "invalid_value"}}},
    {"train with a tab",
     FOUNDING,
     "{'data': {'train': 'a\\tb'}}",
     NULL,
     BAD,
     {{"/data/train", "invalid_value"}}},
    {"train path of 4097 bytes",
     TINY,
     "{'data': {'train': '" A4096 "b'}}",
     NULL,
     BAD,
     {{"/data/train", "invalid_value"}}},
    {"train absolute",
     TINY,
     "{'data': {'train': '/etc/shadow'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train in /proc",
     TINY,
     "{'data': {'train': '/proc/self/environ'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train climbing out",
     TINY,
     "{'data': {'train': '../../etc/passwd'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train climbing out from inside",
     TINY,
     "{'data': {'train': 'a/../../b'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train ending in ..",
     TINY,
     "{'data': {'train': 'a/..'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train into another tenant's directory",
     TINY,
     "{'data': {'train': '../0b9e0c52-0000-4000-8000-0000000000a1/train_*.bin'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train with a . component",
     TINY,
     "{'data': {'train': './x.bin'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train of only .",
     TINY,
     "{'data': {'train': '.'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train with an empty component",
     TINY,
     "{'data': {'train': 'a//b.bin'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train ending in a slash",
     TINY,
     "{'data': {'train': 'a/'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train with a pattern in a directory",
     TINY,
     "{'data': {'train': '*/train_*.bin'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train with a bracket in a directory",
     TINY,
     "{'data': {'train': 'a[1]/x.bin'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"train with a component of 256 bytes",
     TINY,
     "{'data': {'train': 'x/" A255 "b'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}}},
    {"val absolute and climbing out, with train",
     TINY,
     "{'data': {'train': '/etc/passwd', 'val': '../v.bin'}}",
     NULL,
     BAD,
     {{"/data/train", "path_not_allowed"}, {"/data/val", "path_not_allowed"}}},
    {"val climbing out",
     FOUNDING,
     "{'data': {'val': 'owt/../../x.bin'}}",
     NULL,
     BAD,
     {{"/data/val", "path_not_allowed"}}},
    {"val of the wrong type",
     FOUNDING,
     "{'data': {'val': 1}}",
     NULL,
     BAD,
     {{"/data/val", "wrong_type"}}},

    /* parallel */
    {"micro and global batch required",
     FOUNDING,
     "{'parallel': {'micro_batch': null, 'global_batch': null}}",
     NULL,
     BAD,
     {{"/parallel/micro_batch", "required"}, {"/parallel/global_batch", "required"}}},
    {"parallel degrees out of range",
     FOUNDING,
     "{'parallel': {'data_parallel': 0, 'tensor_parallel': 1025, 'pipeline_parallel': 0,"
     " 'zero_stage': 4}}",
     NULL,
     BAD,
     {{"/parallel/data_parallel", "out_of_range"},
      {"/parallel/tensor_parallel", "out_of_range"},
      {"/parallel/pipeline_parallel", "out_of_range"},
      {"/parallel/zero_stage", "out_of_range"}}},
    {"more parallel bounds",
     FOUNDING,
     "{'parallel': {'data_parallel': 65537, 'pipeline_parallel': 1025, 'zero_stage': -1,"
     " 'micro_batch': 65537, 'global_batch': 16777217}}",
     NULL,
     BAD,
     {{"/parallel/data_parallel", "out_of_range"},
      {"/parallel/pipeline_parallel", "out_of_range"},
      {"/parallel/zero_stage", "out_of_range"},
      {"/parallel/micro_batch", "out_of_range"},
      {"/parallel/global_batch", "out_of_range"}}},
    {"micro and global batch zero",
     FOUNDING,
     "{'parallel': {'micro_batch': 0, 'global_batch': 0, 'grad_accum': 0}}",
     NULL,
     BAD,
     {{"/parallel/micro_batch", "out_of_range"},
      {"/parallel/global_batch", "out_of_range"},
      {"/parallel/grad_accum", "out_of_range"}}},
    {"parallel fields of the wrong type",
     FOUNDING,
     "{'parallel': {'data_parallel': '8', 'micro_batch': 4.5}}",
     NULL,
     BAD,
     {{"/parallel/data_parallel", "wrong_type"}, {"/parallel/micro_batch", "wrong_type"}}},

    /* resources */
    {"nodes required",
     FOUNDING,
     "{'resources': {'nodes': null}}",
     NULL,
     BAD,
     {{"/resources/nodes", "required"}}},
    {"resources out of range",
     FOUNDING,
     "{'resources': {'nodes': 4097, 'gpus_per_node': 65, 'ranks_per_node': 257,"
     " 'time_limit_minutes': 0}}",
     NULL,
     BAD,
     {{"/resources/nodes", "out_of_range"},
      {"/resources/gpus_per_node", "out_of_range"},
      {"/resources/ranks_per_node", "out_of_range"},
      {"/resources/time_limit_minutes", "out_of_range"}}},
    {"resources lower bounds",
     FOUNDING,
     "{'resources': {'nodes': 0, 'gpus_per_node': -1, 'ranks_per_node': 0,"
     " 'time_limit_minutes': 525601}}",
     NULL,
     BAD,
     {{"/resources/nodes", "out_of_range"},
      {"/resources/gpus_per_node", "out_of_range"},
      {"/resources/ranks_per_node", "out_of_range"},
      {"/resources/time_limit_minutes", "out_of_range"}}},
    {"resources of the wrong type",
     FOUNDING,
     "{'resources': {'nodes': '8', 'gpus_per_node': 8.0}}",
     NULL,
     BAD,
     {{"/resources/nodes", "wrong_type"}, {"/resources/gpus_per_node", "wrong_type"}}},
    {"partition with a space",
     FOUNDING,
     "{'resources': {'partition': 'gpu a100'}}",
     NULL,
     BAD,
     {{"/resources/partition", "invalid_value"}}},
    {"partition of 65 characters",
     FOUNDING,
     "{'resources': {'partition': '" A64 "b'}}",
     NULL,
     BAD,
     {{"/resources/partition", "invalid_value"}}},
    {"partition empty",
     FOUNDING,
     "{'resources': {'partition': ''}}",
     NULL,
     BAD,
     {{"/resources/partition", "invalid_value"}}},
    {"partition of the wrong type",
     FOUNDING,
     "{'resources': {'partition': 1}}",
     NULL,
     BAD,
     {{"/resources/partition", "wrong_type"}}},

    /* training */
    {"steps required",
     FOUNDING,
     "{'training': {'steps': null}}",
     NULL,
     BAD,
     {{"/training/steps", "required"}}},
    {"steps zero",
     FOUNDING,
     "{'training': {'steps': 0}}",
     NULL,
     BAD,
     {{"/training/steps", "out_of_range"}}},
    {"steps too many",
     FOUNDING,
     "{'training': {'steps': 100000001}}",
     NULL,
     BAD,
     {{"/training/steps", "out_of_range"}}},
    {"lr zero", FOUNDING, "{'training': {'lr': 0}}", NULL, BAD, {{"/training/lr", "out_of_range"}}},
    {"lr negative",
     FOUNDING,
     "{'training': {'lr': -0.1}}",
     NULL,
     BAD,
     {{"/training/lr", "out_of_range"}}},
    {"lr too big",
     FOUNDING,
     "{'training': {'lr': 10.5}}",
     NULL,
     BAD,
     {{"/training/lr", "out_of_range"}}},
    {"lr of the wrong type",
     FOUNDING,
     "{'training': {'lr': '3e-4'}}",
     NULL,
     BAD,
     {{"/training/lr", "wrong_type"}}},
    {"warmup beyond steps",
     FOUNDING,
     "{'training': {'warmup_steps': 10001}}",
     NULL,
     BAD,
     {{"/training/warmup_steps", "out_of_range"}}},
    {"warmup negative",
     FOUNDING,
     "{'training': {'warmup_steps': -1}}",
     NULL,
     BAD,
     {{"/training/warmup_steps", "out_of_range"}}},
    {"schedule unknown",
     FOUNDING,
     "{'training': {'schedule': 'step'}}",
     NULL,
     BAD,
     {{"/training/schedule", "invalid_value"}}},
    {"schedule of the wrong type",
     FOUNDING,
     "{'training': {'schedule': 1}}",
     NULL,
     BAD,
     {{"/training/schedule", "wrong_type"}}},
    {"lr_convention unknown",
     FOUNDING,
     "{'training': {'lr_convention': 'torch'}}",
     NULL,
     BAD,
     {{"/training/lr_convention", "invalid_value"}}},
    {"min_lr_fraction above 1",
     FOUNDING,
     "{'training': {'min_lr_fraction': 1.5}}",
     NULL,
     BAD,
     {{"/training/min_lr_fraction", "out_of_range"}}},
    {"min_lr_fraction negative",
     FOUNDING,
     "{'training': {'min_lr_fraction': -0.1}}",
     NULL,
     BAD,
     {{"/training/min_lr_fraction", "out_of_range"}}},
    {"shuffle not a boolean",
     FOUNDING,
     "{'data': {'shuffle': 'no'}}",
     NULL,
     BAD,
     {{"/data/shuffle", "wrong_type"}}},
    {"shuffle as a number",
     FOUNDING,
     "{'data': {'shuffle': 0}}",
     NULL,
     BAD,
     {{"/data/shuffle", "wrong_type"}}},
    {"precision unknown",
     FOUNDING,
     "{'training': {'precision': 'int8'}}",
     NULL,
     BAD,
     {{"/training/precision", "invalid_value"}}},
    {"recompute unknown",
     FOUNDING,
     "{'training': {'recompute': 'some'}}",
     NULL,
     BAD,
     {{"/training/recompute", "invalid_value"}}},
    {"recompute full accepted", TINY, "{'training': {'recompute': 'full'}}", NULL, OK0, {{0}}},
    {"precision of the wrong type",
     FOUNDING,
     "{'training': {'precision': []}}",
     NULL,
     BAD,
     {{"/training/precision", "wrong_type"}}},
    {"grad_clip and weight_decay below range",
     FOUNDING,
     "{'training': {'grad_clip': -1, 'weight_decay': -0.1}}",
     NULL,
     BAD,
     {{"/training/grad_clip", "out_of_range"}, {"/training/weight_decay", "out_of_range"}}},
    {"grad_clip and weight_decay above range",
     FOUNDING,
     "{'training': {'grad_clip': 1000001, 'weight_decay': 10.01}}",
     NULL,
     BAD,
     {{"/training/grad_clip", "out_of_range"}, {"/training/weight_decay", "out_of_range"}}},
    {"AdamW's betas, epsilon and the clip epsilon below range",
     FOUNDING,
     "{'training': {'adam_beta1': -0.1, 'adam_beta2': -1, 'adam_eps': 0, 'grad_clip_eps': -1e-9}}",
     NULL,
     BAD,
     {{"/training/grad_clip_eps", "out_of_range"},
      {"/training/adam_beta1", "out_of_range"},
      {"/training/adam_beta2", "out_of_range"},
      {"/training/adam_eps", "out_of_range"}}},
    {"AdamW's betas of 1, an epsilon and a clip epsilon above 1",
     FOUNDING,
     "{'training': {'adam_beta1': 1, 'adam_beta2': 1.0, 'adam_eps': 2, 'grad_clip_eps': 1.5}}",
     NULL,
     BAD,
     {{"/training/grad_clip_eps", "out_of_range"},
      {"/training/adam_beta1", "out_of_range"},
      {"/training/adam_beta2", "out_of_range"},
      {"/training/adam_eps", "out_of_range"}}},
    {"PyTorch's and llm.c's optimizer settings accepted",
     TINY,
     "{'training': {'adam_beta1': 0, 'adam_beta2': 0.999, 'adam_eps': 1, 'grad_clip_eps': 0}}",
     NULL,
     OK0,
     {{0}}},
    {"seed negative",
     FOUNDING,
     "{'training': {'seed': -1}}",
     NULL,
     BAD,
     {{"/training/seed", "out_of_range"}}},
    {"seed above 2^53",
     FOUNDING,
     "{'training': {'seed': 9007199254740993}}",
     NULL,
     BAD,
     {{"/training/seed", "out_of_range"}}},
    {"seed not whole",
     FOUNDING,
     "{'training': {'seed': 1.5}}",
     NULL,
     BAD,
     {{"/training/seed", "wrong_type"}}},

    /* checkpoint */
    {"checkpoint beyond steps",
     FOUNDING,
     "{'checkpoint': {'every_steps': 10001}}",
     NULL,
     BAD,
     {{"/checkpoint/every_steps", "out_of_range"}}},
    {"checkpoint bounds",
     FOUNDING,
     "{'checkpoint': {'every_steps': 0, 'keep': 0}}",
     NULL,
     BAD,
     {{"/checkpoint/every_steps", "out_of_range"}, {"/checkpoint/keep", "out_of_range"}}},
    {"checkpoint keep too many",
     FOUNDING,
     "{'checkpoint': {'keep': 1001}}",
     NULL,
     BAD,
     {{"/checkpoint/keep", "out_of_range"}}},
    {"checkpoint keep of the wrong type",
     FOUNDING,
     "{'checkpoint': {'keep': '3'}}",
     NULL,
     BAD,
     {{"/checkpoint/keep", "wrong_type"}}},

    /* fault tolerance */
    {"restarts and heartbeat above range",
     FOUNDING,
     "{'fault_tolerance': {'max_restarts': 101, 'heartbeat_timeout_s': 86401}}",
     NULL,
     BAD,
     {{"/fault_tolerance/max_restarts", "out_of_range"},
      {"/fault_tolerance/heartbeat_timeout_s", "out_of_range"}}},
    {"restarts and heartbeat below range",
     FOUNDING,
     "{'fault_tolerance': {'max_restarts': -1, 'heartbeat_timeout_s': 9}}",
     NULL,
     BAD,
     {{"/fault_tolerance/max_restarts", "out_of_range"},
      {"/fault_tolerance/heartbeat_timeout_s", "out_of_range"}}},
    {"fallback unknown word",
     FOUNDING,
     "{'fault_tolerance': {'fallback': 'manual'}}",
     NULL,
     BAD,
     {{"/fault_tolerance/fallback", "invalid_value"}}},
    {"fallback a number",
     FOUNDING,
     "{'fault_tolerance': {'fallback': 5}}",
     NULL,
     BAD,
     {{"/fault_tolerance/fallback", "wrong_type"}}},
    {"fallback an object",
     FOUNDING,
     "{'fault_tolerance': {'fallback': {'data_parallel': 4}}}",
     NULL,
     BAD,
     {{"/fault_tolerance/fallback", "wrong_type"}}},
    {"nine fallbacks",
     FOUNDING,
     FALLBACK(LADDER7 "," L(1, 2, 1) "," L(1, 1, 1)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback", "out_of_range"}}},
    {"fallback entry not an object",
     FOUNDING,
     FALLBACK(L(4, 4, 2) ", 4"),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/1", "wrong_type"}}},
    {"fallback entry needs its degrees",
     FOUNDING,
     FALLBACK("{}"),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/data_parallel", "required"},
      {"/fault_tolerance/fallback/0/tensor_parallel", "required"},
      {"/fault_tolerance/fallback/0/pipeline_parallel", "required"}}},
    {"fallback entry out of range",
     FOUNDING,
     FALLBACK("{'data_parallel': 0, 'tensor_parallel': 2000, 'pipeline_parallel': 2,"
              " 'zero_stage': 4, 'micro_batch': 0}"),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/data_parallel", "out_of_range"},
      {"/fault_tolerance/fallback/0/tensor_parallel", "out_of_range"},
      {"/fault_tolerance/fallback/0/zero_stage", "out_of_range"},
      {"/fault_tolerance/fallback/0/micro_batch", "out_of_range"}}},
    {"fallback heads not divisible by its tp",
     FOUNDING,
     FALLBACK(L(8, 3, 1)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/tensor_parallel", "heads_not_divisible_by_tp"}}},
    {"fallback layers not divisible by its pp",
     FOUNDING,
     FALLBACK(L(2, 4, 5)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/pipeline_parallel", "layers_not_divisible_by_pp"}}},
    {"fallback batch mismatch",
     FOUNDING,
     FALLBACK(L(6, 4, 2)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/data_parallel", "batch_mismatch"}}},
    {"fallback micro_batch breaks the batch",
     FOUNDING,
     FALLBACK("{'data_parallel': 4, 'tensor_parallel': 4, 'pipeline_parallel': 2,"
              " 'micro_batch': 3}"),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/data_parallel", "batch_mismatch"}}},
    {"fallback grad_accum wrong",
     FOUNDING,
     FALLBACK("{'data_parallel': 4, 'tensor_parallel': 4, 'pipeline_parallel': 2,"
              " 'grad_accum': 8}"),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0/grad_accum", "batch_mismatch"}}},
    {"fallback as large as the job",
     FOUNDING,
     FALLBACK(L(8, 4, 2)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0", "fallback_not_smaller"}}},
    {"fallback larger than the job",
     FOUNDING,
     FALLBACK(L(16, 4, 2)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/0", "fallback_not_smaller"}}},
    {"second fallback not smaller than the first",
     FOUNDING,
     FALLBACK(L(4, 4, 2) "," L(2, 4, 4) "," L(1, 4, 2)),
     NULL,
     BAD,
     {{"/fault_tolerance/fallback/1", "fallback_not_smaller"}}},

    /* cross-field rules of the job */
    {"ranks mismatch",
     FOUNDING,
     "{'parallel': {'data_parallel': 4}}",
     NULL,
     BAD,
     {{"/parallel/data_parallel", "ranks_mismatch"}}},
    {"ranks mismatch with CPU ranks",
     TINY,
     "{'resources': {'nodes': 2}}",
     NULL,
     BAD,
     {{"/parallel/data_parallel", "ranks_mismatch"}}},
    {"ranks_per_node differs from gpus_per_node",
     FOUNDING,
     "{'resources': {'ranks_per_node': 4}, 'parallel': {'data_parallel': 4}}",
     NULL,
     BAD,
     {{"/resources/ranks_per_node", "gpus_ranks_mismatch"}}},
    {"global_batch not a whole accumulation",
     FOUNDING,
     "{'parallel': {'global_batch': 250}}",
     NULL,
     BAD,
     {{"/parallel/global_batch", "batch_mismatch"}}},
    {"global_batch below micro_batch x data_parallel",
     FOUNDING,
     "{'parallel': {'global_batch': 16}}",
     NULL,
     BAD,
     {{"/parallel/global_batch", "batch_mismatch"}}},
    {"grad_accum given and wrong",
     FOUNDING,
     "{'parallel': {'grad_accum': 4}}",
     NULL,
     BAD,
     {{"/parallel/grad_accum", "batch_mismatch"}}},
    {"gpt2-1558m's 25 heads with tp 4",
     FOUNDING,
     "{'model': {'preset': 'gpt2-1558m'}}",
     NULL,
     BAD,
     {{"/parallel/tensor_parallel", "heads_not_divisible_by_tp"}}},
    {"gpt2-774m's 36 layers with pp 8",
     FOUNDING,
     "{'model': {'preset': 'gpt2-774m'}, 'parallel': {'data_parallel': 2,"
     " 'pipeline_parallel': 8}}",
     NULL,
     BAD,
     {{"/parallel/pipeline_parallel", "layers_not_divisible_by_pp"}}},
    {"heads override leaves d_model indivisible",
     FOUNDING,
     "{'model': {'heads': 12}}",
     NULL,
     BAD,
     {{"/model/heads", "d_model_not_divisible_by_heads"}}},
    {"d_model override indivisible by the preset's heads",
     FOUNDING,
     "{'model': {'preset': 'gpt2-124m', 'd_model': 770}}",
     NULL,
     BAD,
     {{"/model/d_model", "d_model_not_divisible_by_heads"}}},
    {"explicit d_model and heads indivisible",
     TINY,
     "{'model': {'preset': null, 'layers': 2, 'd_model': 100, 'heads': 3, 'vocab_size': 9,"
     " 'seq_len': 8}}",
     NULL,
     BAD,
     {{"/model/heads", "d_model_not_divisible_by_heads"}}},
    {"rules skip values already reported",
     FOUNDING,
     "{'model': {'heads': 0}, 'parallel': {'micro_batch': 'x'}, 'resources': {'nodes': 0}}",
     NULL,
     BAD,
     {{"/model/heads", "out_of_range"},
      {"/parallel/micro_batch", "wrong_type"},
      {"/resources/nodes", "out_of_range"}}},

    /* quota */
    {"quota: more GPUs than max_gpus",
     FOUNDING,
     "{}",
     &q_few_gpus,
     BAD,
     {{"/resources/nodes", "quota_never_fits"}}},
    {"quota: max_running_jobs is 0",
     FOUNDING,
     "{}",
     &q_no_jobs,
     BAD,
     {{"/resources/nodes", "quota_never_fits"}}},
    {"quota: more GPU-hours than a month allows",
     FOUNDING,
     "{}",
     &q_few_hours,
     BAD,
     {{"/resources/nodes", "quota_never_fits"}}},
    {"quota: a minute over the GPU-hours",
     FOUNDING,
     "{'resources': {'time_limit_minutes': 61}}",
     &q_exact,
     BAD,
     {{"/resources/nodes", "quota_never_fits"}}},
    {"quota: CPU ranks count against max_gpus",
     TINY,
     "{'parallel': {'data_parallel': 4, 'global_batch': 16},"
     " 'resources': {'ranks_per_node': 4}}",
     &q_three_devices,
     BAD,
     {{"/resources/nodes", "quota_never_fits"}}},
    {"quota: a CPU job is never charged GPU-hours",
     TINY,
     "{'resources': {'time_limit_minutes': 600}}",
     &q_no_hours,
     OK0,
     {{0}}},
    {"resources: more nodes than the scheduler places",
     TINY,
     "{'resources': {'nodes': 300}}",
     NULL,
     BAD,
     {{"/resources/nodes", "out_of_range"}}},
    {"quota: all three limits at once",
     FOUNDING,
     "{}",
     &q_nothing,
     BAD,
     {{"/resources/nodes", "quota_never_fits"},
      {"/resources/nodes", "quota_never_fits"},
      {"/resources/nodes", "quota_never_fits"}}},

    /* several problems in one pass */
    {"several problems at once",
     FOUNDING,
     "{'name': '', 'tenant': 't', 'model': {'preset': 'nope'},"
     " 'parallel': {'data_parallel': 4, 'global_batch': 250},"
     " 'training': {'lr': 0, 'schedule': 'step'}, 'fault_tolerance': {'max_restarts': 500}}",
     &q_roomy,
     BAD,
     {{"/name", "invalid_value"},
      {"/tenant", "unknown_field"},
      {"/model/preset", "unknown_preset"},
      {"/parallel/data_parallel", "ranks_mismatch"},
      {"/parallel/global_batch", "batch_mismatch"},
      {"/training/lr", "out_of_range"},
      {"/training/schedule", "invalid_value"},
      {"/fault_tolerance/max_restarts", "out_of_range"}}},
    /* ---- kind "command" ---- */
    {"command job validates", CMD, "{}", NULL, OK0, {{0}}},
    {"command job with everything",
     CMD,
     "{'env': {'OMP_NUM_THREADS': '1', 'APP_MODE': 'fast', 'NCCL_DEBUG': 'INFO'},"
     " 'data': {'dataset': 'corpus@2'}, 'training': {'steps': 40}, 'checkpoint': {'keep': 2},"
     " 'fault_tolerance': {'max_restarts': 1, 'heartbeat_timeout_s': 30},"
     " 'resources': {'min_nodes': 1, 'gpus_per_node': 2, 'partition': 'main'}}",
     NULL,
     OK0,
     {{0}}},
    {"command: the bundle's own executable",
     CMD,
     "{'command': ['./bin/run.sh', 'a b', '']}",
     NULL,
     OK0,
     {{0}}},
    {"command: python -m a module of the bundle",
     CMD,
     "{'command': ['python3', '-W', 'ignore', '-m', 'pkg.train']}",
     NULL,
     OK0,
     {{0}}},
    {"command: a shell string",
     CMD,
     "{'command': 'python3 train.py; rm -rf ~'}",
     NULL,
     BAD,
     {{"/command", "command_not_argv"}}},
    {"command: a program string",
     CMD,
     "{'command': ['bash', '-c', 'echo hi']}",
     NULL,
     BAD,
     {{"/command/1", "command_not_argv"}}},
    {"command: python -c",
     CMD,
     "{'command': ['python3', '-uc', 'print(1)']}",
     NULL,
     BAD,
     {{"/command/1", "command_not_argv"}}},
    {"command: paths out of the bundle",
     CMD,
     "{'command': ['/usr/bin/python3', 'x.py']}",
     NULL,
     BAD,
     {{"/command/0", "command_not_in_bundle"}}},
    {"command: a script above the bundle",
     CMD,
     "{'command': ['python3', '../x.py']}",
     NULL,
     BAD,
     {{"/command/1", "command_not_in_bundle"}}},
    {"command: an interpreter with nothing to run",
     CMD,
     "{'command': ['python3', '-u']}",
     NULL,
     BAD,
     {{"/command/0", "command_not_in_bundle"}}},
    {"command: empty, and not strings",
     CMD,
     "{'command': []}",
     NULL,
     BAD,
     {{"/command", "out_of_range"}}},
    {"command: arguments of the wrong type",
     CMD,
     "{'command': ['python3', 5, '']}",
     NULL,
     BAD,
     {{"/command/1", "wrong_type"}}},
    {"command: env names the platform keeps",
     CMD,
     "{'env': {'RANK': '3', 'LD_PRELOAD': '/x.so', 'PATH': '/tmp', 'TRAINYARD_DATA_KEY': 'k',"
     " 'APP_': 'x', 'APP_OK': 7}}",
     NULL,
     BAD,
     {{"/env/RANK", "env_not_allowed"},
      {"/env/LD_PRELOAD", "env_not_allowed"},
      {"/env/PATH", "env_not_allowed"},
      {"/env/TRAINYARD_DATA_KEY", "env_not_allowed"},
      {"/env/APP_", "env_not_allowed"},
      {"/env/APP_OK", "wrong_type"}}},
    {"command: another tenant's code (a grant decides, at submission)",
     CMD,
     "{'code': 'other/trainer@1'}",
     NULL,
     OK0,
     {{0}}},
    {"command: code badly named",
     CMD,
     "{'code': 'Other/trainer@x'}",
     NULL,
     BAD,
     {{"/code", "invalid_value"}}},
    {"command: what only the built-in trainer takes",
     CMD,
     "{'model': {'preset': 'tiny'}, 'parallel': {'micro_batch': 1},"
     " 'data': {'train': 'x/*.bin'}, 'training': {'lr': 0.1},"
     " 'checkpoint': {'every_steps': 5}, 'fault_tolerance': {'fallback': 'auto'}}",
     NULL,
     BAD,
     {{"/model", "unknown_field"},
      {"/parallel", "unknown_field"},
      {"/data/train", "unknown_field"},
      {"/training/lr", "unknown_field"},
      {"/checkpoint/every_steps", "unknown_field"},
      {"/fault_tolerance/fallback", "unknown_field"}}},
    {"command: required fields",
     NULL,
     "{'name': 'x', 'kind': 'command'}",
     NULL,
     BAD,
     {{"/code", "required"}, {"/command", "required"}, {"/resources", "required"}}},
    {"command: min_nodes above nodes",
     CMD,
     "{'resources': {'min_nodes': 3}}",
     NULL,
     BAD,
     {{"/resources/min_nodes", "out_of_range"}}},
    {"the trainer takes no command fields",
     TINY,
     "{'command': ['python3', 'x.py'], 'code': 'x', 'env': {}, 'resources': {'min_nodes': 1}}",
     NULL,
     BAD,
     {{"/command", "unknown_field"},
      {"/code", "unknown_field"},
      {"/env", "unknown_field"},
      {"/resources/min_nodes", "unknown_field"}}},
    {"an unknown kind", TINY, "{'kind': 'notebook'}", NULL, BAD, {{"/kind", "invalid_value"}}},
};

#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* RET: a new value parsed from JSON written with single quotes. */
static json_t *parse_quoted(const char *text)
{
	size_t n = strlen(text);
	char *buf = malloc(n + 1);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i <= n; i++)
		buf[i] = text[i] == '\'' ? '"' : text[i];
	char msg[256] = "";
	json_t *j = NULL;
	int rc = jsonx_parse(buf, n, &limits, &j, msg, sizeof(msg));
	ck_assert_msg(rc == 0, "test JSON does not parse: %s: %s", msg, text);
	free(buf);
	return j;
}

/* RFC 7386: RET the patched target (target is consumed). */
static json_t *merge_patch(json_t *target, const json_t *patch)
{
	if (!json_is_object(patch)) {
		json_decref(target);
		return json_deep_copy(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	const char *k;
	json_t *val;
	json_object_foreach ((json_t *)patch, k, val) {
		if (json_is_null(val))
			json_object_del(target, k);
		else
			json_object_set_new(
			    target, k, merge_patch(json_incref(json_object_get(target, k)), val));
	}
	return target;
}

/* RET: the base document with patch applied, both given with single quotes. */
static json_t *patched(const char *base, const char *patch)
{
	json_t *p = parse_quoted(patch);
	json_t *doc = base ? merge_patch(parse_quoted(base), p) : json_incref(p);
	json_decref(p);
	return doc;
}

static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	return s ? s : strdup("(null)");
}

START_TEST(test_table)
{
	const spec_case *tc = &cases[_i];
	json_t *doc = patched(tc->base, tc->json);
	jobspec s;
	json_t *norm = NULL;
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(doc, tc->quota, &s, &norm, &v);
	char *rows = dump(v.list);
	ck_assert_msg(rc == tc->rc, "%s: RET %d, want %d; rows %s", tc->name, rc, tc->rc, rows);
	ck_assert_msg((norm != NULL) == (rc == 0), "%s: normalized present iff valid", tc->name);

	size_t nwant = 0;
	bool used[64] = {false};
	ck_assert_msg(verrs_count(&v) < 64, "%s: too many rows: %s", tc->name, rows);
	for (; nwant < 10 && tc->want[nwant].pointer; nwant++) {
		const expect *w = &tc->want[nwant];
		bool found = false;
		for (size_t i = 0; i < verrs_count(&v) && !found; i++) {
			json_t *row = json_array_get(v.list, i);
			const char *p = json_string_value(json_object_get(row, "pointer"));
			const char *code = json_string_value(json_object_get(row, "code"));
			const char *msg = json_string_value(json_object_get(row, "message"));
			ck_assert_msg(p && code && msg && *msg, "%s: malformed row", tc->name);
			if (!used[i] && strcmp(p, w->pointer) == 0 && strcmp(code, w->code) == 0)
				used[i] = found = true;
		}
		ck_assert_msg(found, "%s: no row (%s, %s) in %s", tc->name, w->pointer, w->code,
		              rows);
	}
	ck_assert_msg(verrs_count(&v) == nwant, "%s: %zu rows, want %zu: %s", tc->name,
	              verrs_count(&v), nwant, rows);
	free(rows);
	json_decref(norm);
	json_decref(doc);
	verrs_release(&v);
}
END_TEST

/* Parse base+patch, which must be valid. OUT: *s. RET: the normalized form. */
static json_t *valid(const char *base, const char *patch, jobspec *s)
{
	json_t *doc = patched(base, patch);
	json_t *norm = NULL;
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(doc, NULL, s, &norm, &v);
	char *rows = dump(v.list);
	ck_assert_msg(rc == 0 && norm != NULL, "spec should be valid: %s", rows);
	free(rows);
	verrs_release(&v);
	json_decref(doc);
	return norm;
}

/* RET: the member at an RFC 6901 pointer without escapes, or NULL. */
static json_t *at(json_t *j, const char *pointer)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", pointer);
	char *save = NULL;
	for (char *seg = strtok_r(buf, "/", &save); seg && j; seg = strtok_r(NULL, "/", &save))
		j = json_is_array(j) ? json_array_get(j, strtoul(seg, NULL, 10))
		                     : json_object_get(j, seg);
	return j;
}

static void want_int(json_t *j, const char *pointer, json_int_t x)
{
	json_t *m = at(j, pointer);
	ck_assert_msg(json_is_integer(m), "%s is not an integer", pointer);
	ck_assert_msg(json_integer_value(m) == x, "%s is %lld, want %lld", pointer,
	              (long long)json_integer_value(m), (long long)x);
}

static void want_real(json_t *j, const char *pointer, double x)
{
	json_t *m = at(j, pointer);
	ck_assert_msg(json_is_real(m), "%s is not a real", pointer);
	ck_assert_msg(json_real_value(m) == x, "%s is %g, want %g", pointer, json_real_value(m), x);
}

static void want_str(json_t *j, const char *pointer, const char *x)
{
	json_t *m = at(j, pointer);
	ck_assert_msg(json_is_string(m), "%s is not a string", pointer);
	ck_assert_str_eq(json_string_value(m), x);
}

START_TEST(test_command_normal_form)
{
	jobspec s;
	json_t *n =
	    valid(CMD, "{'env': {'APP_X': 'y'}, 'resources': {'nodes': 5, 'min_nodes': 2}}", &s);
	ck_assert_int_eq(s.kind, JOBSPEC_KIND_COMMAND);
	want_str(n, "/kind", "command");
	want_str(n, "/command/2", "train.py");
	want_str(n, "/env/APP_X", "y");
	want_int(n, "/resources/min_nodes", 2);
	want_int(n, "/checkpoint/keep", 3);
	want_int(n, "/fault_tolerance/heartbeat_timeout_s", 300);
	ck_assert_ptr_null(json_object_get(n, "model"));
	ck_assert_int_eq(s.command.argc, 5);
	ck_assert_str_eq(jobspec_command_arg(&s.command, 4), "20");
	ck_assert_str_eq(jobspec_command_env(&s.command, 0), "APP_X=y");
	/* the elastic range: whole nodes of 2 ranks, 5 down to 2 */
	ck_assert_int_eq(s.parallel.data_parallel, 10);
	ck_assert_int_eq(s.n_fallback, 3);
	ck_assert_int_eq(s.fallback[0].data_parallel, 8);
	ck_assert_int_eq(s.fallback[2].data_parallel, 4);
	ck_assert(!s.fallback_auto);
	/* the normal form reads back as itself */
	jobspec again;
	json_t *n2 = NULL;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(n, NULL, &again, &n2, &v), 0);
	ck_assert(json_equal(n, n2));
	verrs_release(&v);
	json_decref(n2);
	json_decref(n);
	/* a wide range keeps at most JOBSPEC_MAX_FALLBACK rungs, the last at min_nodes */
	n = valid(CMD, "{'resources': {'nodes': 40, 'min_nodes': 1}}", &s);
	ck_assert_int_eq(s.n_fallback, JOBSPEC_MAX_FALLBACK);
	ck_assert_int_eq(s.fallback[JOBSPEC_MAX_FALLBACK - 1].data_parallel, 2);
	for (int i = 1; i < s.n_fallback; i++)
		ck_assert_int_lt(s.fallback[i].data_parallel, s.fallback[i - 1].data_parallel);
	json_decref(n);
}
END_TEST

START_TEST(test_defaults_filled)
{
	jobspec s;
	json_t *n = valid(TINY, "{}", &s);
	want_int(n, "/parallel/data_parallel", 1);
	want_int(n, "/parallel/tensor_parallel", 1);
	want_int(n, "/parallel/pipeline_parallel", 1);
	want_int(n, "/parallel/zero_stage", 0);
	want_int(n, "/parallel/grad_accum", 2);
	want_int(n, "/resources/gpus_per_node", 0);
	want_int(n, "/resources/ranks_per_node", 1);
	want_int(n, "/resources/time_limit_minutes", 60);
	want_real(n, "/training/lr", 3e-4);
	want_int(n, "/training/warmup_steps", 0);
	want_str(n, "/training/schedule", "cosine");
	want_str(n, "/training/lr_convention", "trainyard");
	want_real(n, "/training/min_lr_fraction", 0.1);
	ck_assert(json_is_true(at(n, "/data/shuffle")));
	ck_assert(s.data.shuffle);
	ck_assert_int_eq(s.training.lr_convention, JOBSPEC_LR_TRAINYARD);
	want_str(n, "/training/precision", "fp32");
	want_real(n, "/training/grad_clip", 1.0);
	want_real(n, "/training/weight_decay", 0.1);
	want_real(n, "/training/grad_clip_eps", 1e-6);
	want_real(n, "/training/adam_beta1", 0.9);
	want_real(n, "/training/adam_beta2", 0.95);
	want_real(n, "/training/adam_eps", 1e-8);
	want_int(n, "/training/seed", 1234);
	want_int(n, "/checkpoint/every_steps", 50);
	want_int(n, "/checkpoint/keep", 3);
	want_int(n, "/fault_tolerance/max_restarts", 3);
	want_int(n, "/fault_tolerance/heartbeat_timeout_s", 300);
	want_str(n, "/fault_tolerance/fallback", "auto");
	ck_assert_ptr_null(at(n, "/data/val"));
	ck_assert_ptr_null(at(n, "/resources/partition"));
	ck_assert(s.fallback_auto);
	ck_assert_int_eq(s.n_fallback, 0);
	ck_assert_int_eq(s.training.schedule, JOBSPEC_SCHEDULE_COSINE);
	ck_assert_int_eq(s.checkpoint.every_steps, 50);
	ck_assert_str_eq(s.data.val, "");
	json_decref(n);
}
END_TEST

START_TEST(test_every_steps_default_capped)
{
	jobspec s;
	json_t *n = valid(TINY, "{'training': {'steps': 5000}}", &s);
	want_int(n, "/checkpoint/every_steps", 1000);
	ck_assert_int_eq(s.checkpoint.every_steps, 1000);
	json_decref(n);
}
END_TEST

START_TEST(test_given_values_kept)
{
	jobspec s;
	json_t *n = valid(TINY,
	                  "{'resources': {'partition': 'cpu', 'time_limit_minutes': 5},"
	                  " 'training': {'lr': 1, 'schedule': 'linear', 'seed': 7,"
	                  " 'precision': 'bf16', 'lr_convention': 'llmc', 'min_lr_fraction': 0},"
	                  " 'data': {'val': 'v.bin', 'shuffle': false}}",
	                  &s);
	want_str(n, "/training/lr_convention", "llmc");
	want_real(n, "/training/min_lr_fraction", 0.0);
	ck_assert(json_is_false(at(n, "/data/shuffle")));
	ck_assert(!s.data.shuffle);
	ck_assert_int_eq(s.training.lr_convention, JOBSPEC_LR_LLMC);
	ck_assert(s.training.min_lr_fraction == 0.0);
	want_str(n, "/resources/partition", "cpu");
	want_int(n, "/resources/time_limit_minutes", 5);
	want_real(n, "/training/lr", 1.0);
	want_str(n, "/training/schedule", "linear");
	want_str(n, "/training/precision", "bf16");
	want_int(n, "/training/seed", 7);
	want_str(n, "/data/val", "v.bin");
	ck_assert_str_eq(s.resources.partition, "cpu");
	ck_assert_int_eq(s.training.precision, JOBSPEC_PRECISION_BF16);
	ck_assert(s.training.lr == 1.0);
	json_decref(n);
}
END_TEST

START_TEST(test_founding_example)
{
	jobspec s;
	json_t *n = valid(FOUNDING, "{}", &s);
	ck_assert_int_eq(s.parallel.data_parallel, 8);
	ck_assert_int_eq(s.parallel.tensor_parallel, 4);
	ck_assert_int_eq(s.parallel.pipeline_parallel, 2);
	ck_assert_int_eq(s.parallel.zero_stage, 3);
	ck_assert_int_eq(s.parallel.grad_accum, 8);
	ck_assert_int_eq(s.global_batch, 256);
	ck_assert_int_eq(s.resources.ranks_per_node, 8);
	ck_assert_int_eq(jobspec_ranks(&s), 64);
	ck_assert_int_eq(jobspec_devices(&s), 64);
	ck_assert_str_eq(s.name, "gpt2-350m dp8 tp4 pp2");
	ck_assert_str_eq(s.data.train, "owt/train_*.bin");
	want_int(n, "/resources/ranks_per_node", 8);
	want_int(n, "/parallel/grad_accum", 8);
	json_decref(n);
}
END_TEST

START_TEST(test_preset_expanded)
{
	jobspec s;
	json_t *n = valid(FOUNDING, "{}", &s);
	want_str(n, "/model/preset", "gpt2-350m");
	want_int(n, "/model/layers", 24);
	want_int(n, "/model/d_model", 1024);
	want_int(n, "/model/heads", 16);
	want_int(n, "/model/vocab_size", 50257);
	want_int(n, "/model/seq_len", 1024);
	ck_assert_str_eq(s.model.preset, "gpt2-350m");
	ck_assert_int_eq(s.model.layers, 24);
	json_decref(n);

	n = valid(TINY, "{}", &s);
	want_int(n, "/model/layers", 2);
	want_int(n, "/model/d_model", 64);
	want_int(n, "/model/heads", 4);
	want_int(n, "/model/vocab_size", 256);
	want_int(n, "/model/seq_len", 64);
	json_decref(n);
}
END_TEST

START_TEST(test_preset_overridden)
{
	jobspec s;
	json_t *n =
	    valid(FOUNDING, "{'model': {'preset': 'gpt2-124m', 'seq_len': 2048, 'layers': 6}}", &s);
	want_str(n, "/model/preset", "gpt2-124m");
	want_int(n, "/model/layers", 6);
	want_int(n, "/model/seq_len", 2048);
	want_int(n, "/model/d_model", 768);
	want_int(n, "/model/heads", 12);
	ck_assert_int_eq(s.model.seq_len, 2048);
	ck_assert_int_eq(s.model.vocab_size, 50257);
	json_decref(n);
}
END_TEST

START_TEST(test_explicit_model_has_no_preset)
{
	jobspec s;
	json_t *n = valid(TINY,
	                  "{'model': {'preset': null, 'layers': 4, 'd_model': 128, 'heads': 8,"
	                  " 'vocab_size': 1000, 'seq_len': 128}}",
	                  &s);
	ck_assert_ptr_null(at(n, "/model/preset"));
	want_int(n, "/model/vocab_size", 1000);
	ck_assert_str_eq(s.model.preset, "");
	json_decref(n);
}
END_TEST

START_TEST(test_fallback_ladder)
{
	jobspec s;
	json_t *n = valid(
	    FOUNDING,
	    FALLBACK(L(4, 4, 2) "," L(2, 4, 2) ", {'data_parallel': 1,"
	                                       " 'tensor_parallel': 4, 'pipeline_parallel': 2,"
	                                       " 'zero_stage': 1, 'micro_batch': 8}"),
	    &s);
	ck_assert(!s.fallback_auto);
	ck_assert_int_eq(s.n_fallback, 3);
	ck_assert_int_eq(s.fallback[0].data_parallel, 4);
	ck_assert_int_eq(s.fallback[0].zero_stage, 3);
	ck_assert_int_eq(s.fallback[0].micro_batch, 4);
	ck_assert_int_eq(s.fallback[0].grad_accum, 16);
	ck_assert_int_eq(s.fallback[1].grad_accum, 32);
	ck_assert_int_eq(s.fallback[2].zero_stage, 1);
	ck_assert_int_eq(s.fallback[2].grad_accum, 32);
	want_int(n, "/fault_tolerance/fallback/0/zero_stage", 3);
	want_int(n, "/fault_tolerance/fallback/0/micro_batch", 4);
	want_int(n, "/fault_tolerance/fallback/0/grad_accum", 16);
	want_int(n, "/fault_tolerance/fallback/2/micro_batch", 8);
	want_int(n, "/fault_tolerance/fallback/2/grad_accum", 32);
	ck_assert_ptr_null(at(n, "/fault_tolerance/fallback/3"));
	json_decref(n);
}
END_TEST

START_TEST(test_devices)
{
	jobspec s;
	json_t *n = valid(TINY,
	                  "{'parallel': {'data_parallel': 8, 'global_batch': 64},"
	                  " 'resources': {'nodes': 2, 'ranks_per_node': 4}}",
	                  &s);
	ck_assert_int_eq(jobspec_ranks(&s), 8);
	ck_assert_int_eq(jobspec_devices(&s), 8);
	json_decref(n);
	n = valid(FOUNDING, "{'resources': {'nodes': 4}, 'parallel': {'data_parallel': 4}}", &s);
	ck_assert_int_eq(jobspec_ranks(&s), 32);
	ck_assert_int_eq(jobspec_devices(&s), 32);
	json_decref(n);
}
END_TEST

/* The stored form is itself valid and normalizes to itself. */
START_TEST(test_normal_form_round_trips)
{
	static const char *const patches[][2] = {
	    {FOUNDING, "{}"},
	    {FOUNDING, FALLBACK(L(4, 4, 2) "," L(1, 4, 2))},
	    {TINY, "{}"},
	    {TINY, "{'model': {'preset': null, 'layers': 4, 'd_model': 128, 'heads': 8,"
	           " 'vocab_size': 1000, 'seq_len': 128}, 'data': {'val': 'v'},"
	           " 'resources': {'partition': 'p'}, 'training': {'lr': 0.5}}"},
	};
	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
		jobspec s1, s2;
		json_t *n1 = valid(patches[i][0], patches[i][1], &s1);
		json_t *n2 = NULL;
		verrs v;
		verrs_init(&v);
		ck_assert_int_eq(jobspec_parse(n1, NULL, &s2, &n2, &v), 0);
		ck_assert_msg(json_equal(n1, n2), "case %zu does not round-trip", i);
		ck_assert_int_eq(s1.parallel.grad_accum, s2.parallel.grad_accum);
		ck_assert_int_eq(s1.n_fallback, s2.n_fallback);
		json_decref(n1);
		json_decref(n2);
		verrs_release(&v);
	}
}
END_TEST

START_TEST(test_normalized_optional)
{
	json_t *doc = patched(FOUNDING, "{}");
	jobspec s;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(doc, &q_roomy, &s, NULL, &v), 0);
	ck_assert_uint_eq(verrs_count(&v), 0);
	ck_assert_int_eq(s.parallel.grad_accum, 8);
	verrs_release(&v);
	json_decref(doc);
}
END_TEST

START_TEST(test_invalid_clears_normalized)
{
	json_t *doc = patched(FOUNDING, "{'name': null}");
	json_t *stale = json_object();
	json_t *norm = stale;
	jobspec s;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(doc, NULL, &s, &norm, &v), -ERR_VALIDATION_FAILED);
	ck_assert_ptr_null(norm);
	json_decref(stale);
	verrs_release(&v);
	json_decref(doc);
}
END_TEST

START_TEST(test_not_an_object)
{
	json_t *values[] = {NULL, json_integer(3), json_string("spec"), json_null()};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		jobspec s;
		json_t *norm = NULL;
		verrs v;
		verrs_init(&v);
		ck_assert_int_eq(jobspec_parse(values[i], NULL, &s, &norm, &v),
		                 -ERR_VALIDATION_FAILED);
		ck_assert_ptr_null(norm);
		ck_assert_uint_eq(verrs_count(&v), 1);
		json_t *row = json_array_get(v.list, 0);
		ck_assert_str_eq(json_string_value(json_object_get(row, "pointer")), "");
		ck_assert_str_eq(json_string_value(json_object_get(row, "code")), "wrong_type");
		verrs_release(&v);
		json_decref(values[i]);
	}
}
END_TEST

/* RET depends on this call's problems, not on rows the caller already had. */
START_TEST(test_prior_rows_kept)
{
	json_t *doc = patched(FOUNDING, "{}");
	jobspec s;
	verrs v;
	verrs_init(&v);
	verrs_add(&v, "/other", ERR_F_REQUIRED, "earlier problem");
	ck_assert_int_eq(jobspec_parse(doc, NULL, &s, NULL, &v), 0);
	ck_assert_uint_eq(verrs_count(&v), 1);
	json_decref(doc);
	doc = patched(FOUNDING, "{'name': null}");
	ck_assert_int_eq(jobspec_parse(doc, NULL, &s, NULL, &v), -ERR_VALIDATION_FAILED);
	ck_assert_uint_eq(verrs_count(&v), 2);
	verrs_release(&v);
	json_decref(doc);
}
END_TEST

/* An unknown key whose name cannot be echoed whole still yields a row. */
START_TEST(test_long_unknown_key_reported)
{
	json_t *doc = patched(FOUNDING, "{'" A8 A8 A8 A8 A8 A8 A8 "aaaaaaa" E1 E1 "': 1}");
	jobspec s;
	json_t *norm = NULL;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(doc, NULL, &s, &norm, &v), -ERR_VALIDATION_FAILED);
	ck_assert_ptr_null(norm);
	ck_assert_uint_ge(verrs_count(&v), 1);
	bool unknown = false;
	for (size_t i = 0; i < verrs_count(&v); i++) {
		const char *code =
		    json_string_value(json_object_get(json_array_get(v.list, i), "code"));
		unknown |= code && strcmp(code, "unknown_field") == 0;
	}
	ck_assert(unknown);
	verrs_release(&v);
	json_decref(doc);
}
END_TEST

/* The demo stack submits deploy/demo-job.json: it must stay valid. */
START_TEST(test_demo_job_valid)
{
	json_error_t err;
	json_t *doc = json_load_file("deploy/demo-job.json", JSON_REJECT_DUPLICATES, &err);
	ck_assert_msg(doc != NULL, "deploy/demo-job.json: %s (run from the repository root)",
	              err.text);
	jobspec s;
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(doc, NULL, &s, NULL, &v);
	char *rows = dump(v.list);
	ck_assert_msg(rc == 0, "deploy/demo-job.json is invalid: %s", rows);
	free(rows);
	verrs_release(&v);
	json_decref(doc);
}
END_TEST

/* jsonx_parse refuses \u0000, but a spec built in C may hold one. */
START_TEST(test_embedded_nul_refused)
{
	json_t *doc = patched(FOUNDING, "{}");
	json_object_set_new(json_object_get(doc, "training"), "precision",
	                    json_stringn("fp32\0x", 6));
	json_object_set_new(doc, "name", json_stringn("a\0b", 3));
	jobspec s;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(doc, NULL, &s, NULL, &v), -ERR_VALIDATION_FAILED);
	ck_assert_uint_eq(verrs_count(&v), 2);
	char *rows = dump(v.list);
	ck_assert_msg(strstr(rows, "/training/precision") && strstr(rows, "/name"), "%s", rows);
	free(rows);
	verrs_release(&v);
	json_decref(doc);
}
END_TEST

START_TEST(test_enum_names)
{
	ck_assert_str_eq(jobspec_schedule_name(JOBSPEC_SCHEDULE_COSINE), "cosine");
	ck_assert_str_eq(jobspec_schedule_name(JOBSPEC_SCHEDULE_LINEAR), "linear");
	ck_assert_str_eq(jobspec_schedule_name(JOBSPEC_SCHEDULE_CONSTANT), "constant");
	ck_assert_str_eq(jobspec_lr_convention_name(JOBSPEC_LR_TRAINYARD), "trainyard");
	ck_assert_str_eq(jobspec_lr_convention_name(JOBSPEC_LR_LLMC), "llmc");
	ck_assert_str_eq(jobspec_lr_convention_name(JOBSPEC_LR_NANOGPT), "nanogpt");
	ck_assert_str_eq(jobspec_precision_name(JOBSPEC_PRECISION_FP32), "fp32");
	ck_assert_str_eq(jobspec_precision_name(JOBSPEC_PRECISION_BF16), "bf16");
	ck_assert_str_eq(jobspec_precision_name(JOBSPEC_PRECISION_FP16), "fp16");
	ck_assert_str_eq(jobspec_recompute_name(JOBSPEC_RECOMPUTE_NONE), "none");
	ck_assert_str_eq(jobspec_recompute_name(JOBSPEC_RECOMPUTE_SELECTIVE), "selective");
	ck_assert_str_eq(jobspec_recompute_name(JOBSPEC_RECOMPUTE_FULL), "full");
}
END_TEST

/* recompute is read, defaults to none, and appears in the normal form. */
START_TEST(test_recompute_normalized)
{
	const char *mode[] = {NULL, "selective"};
	const jobspec_recompute want[] = {JOBSPEC_RECOMPUTE_NONE, JOBSPEC_RECOMPUTE_SELECTIVE};
	for (int i = 0; i < 2; i++) {
		json_t *doc = patched(TINY, "{}");
		if (mode[i])
			json_object_set_new(json_object_get(doc, "training"), "recompute",
			                    json_string(mode[i]));
		jobspec s;
		json_t *norm = NULL;
		verrs v;
		verrs_init(&v);
		ck_assert_int_eq(jobspec_parse(doc, NULL, &s, &norm, &v), 0);
		ck_assert_int_eq(s.training.recompute, want[i]);
		const char *got = json_string_value(
		    json_object_get(json_object_get(norm, "training"), "recompute"));
		ck_assert_str_eq(got ? got : "(absent)", jobspec_recompute_name(want[i]));
		json_decref(norm);
		verrs_release(&v);
		json_decref(doc);
	}
}
END_TEST

static Suite *jobspec_suite(void)
{
	Suite *s = suite_create("jobspec");
	TCase *t = tcase_create("table");
	tcase_add_loop_test(t, test_table, 0, N_CASES);
	suite_add_tcase(s, t);

	t = tcase_create("normal form");
	tcase_add_test(t, test_defaults_filled);
	tcase_add_test(t, test_every_steps_default_capped);
	tcase_add_test(t, test_given_values_kept);
	tcase_add_test(t, test_founding_example);
	tcase_add_test(t, test_preset_expanded);
	tcase_add_test(t, test_preset_overridden);
	tcase_add_test(t, test_explicit_model_has_no_preset);
	tcase_add_test(t, test_fallback_ladder);
	tcase_add_test(t, test_devices);
	tcase_add_test(t, test_normal_form_round_trips);
	tcase_add_test(t, test_command_normal_form);
	suite_add_tcase(s, t);

	t = tcase_create("contract");
	tcase_add_test(t, test_normalized_optional);
	tcase_add_test(t, test_invalid_clears_normalized);
	tcase_add_test(t, test_not_an_object);
	tcase_add_test(t, test_prior_rows_kept);
	tcase_add_test(t, test_long_unknown_key_reported);
	tcase_add_test(t, test_demo_job_valid);
	tcase_add_test(t, test_embedded_nul_refused);
	tcase_add_test(t, test_enum_names);
	tcase_add_test(t, test_recompute_normalized);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jobspec_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
