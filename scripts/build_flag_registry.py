"""Build ``data/flags.json``, deploykb's flag registry, from the fact tables in this file.

The tables hold facts read from the frameworks' own argument definitions (flag names, whether a
flag takes a value, documented choices, aliases, deprecations) plus short descriptions written for
deploykb; no framework source is copied. Edit a table, then re-run:

    .venv/bin/python scripts/build_flag_registry.py            # writes data/flags.json
    .venv/bin/python scripts/build_flag_registry.py --check    # exit 1 if data/flags.json is stale

Table syntax, one flag a line:  ``KIND name [= alias, alias] [: choice,choice | : @other-flag]``.
KIND is ``V`` (takes one value), ``B`` (switch), ``O`` (switch that also accepts ``--no-name``),
``M`` (one or more values), ``Q`` (value optional). Names are written without their leading
dashes, except single-dash aliases (``-tp``). A line ``+ more,choices`` continues the choice list
of the line above.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "data" / "flags.json"

# ---------------------------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------------------------

SGLANG_SOURCE = (
    "sgl-project/sglang python/sglang/srt/server_args.py @001067ff: ServerArgs fields (flag = "
    "field name with dashes unless cli_name is set; bool -> switch; BooleanOptionalAction where "
    "declared; "
    "List fields take several values) and add_cli_args (--reasoning-parser, --tool-call-parser, "
    "--config, deprecated registrations); python/sglang/srt/arg_groups/arg_utils.py @0116c606 "
    "(field -> argparse rules; plain argparse, so unique prefixes such as --tp are accepted); "
    "python/sglang/srt/environ.py @0003215c (environment variables, deprecated names, SGL_ prefix "
    "rewritten to SGLANG_). Not in that source: --fp8-gemm-runner-backend is rejected as an "
    "unrecognized argument by SGLang v0.5.12 (SemiAnalysisAI/InferenceX#1447); FP4 GEMM backend "
    "values gained the flashinfer_ prefix in sgl-project/sglang#17309."
)

SGLANG_TABLE = """
V config
V model-path = model
V tokenizer-path
V tokenizer-mode : auto,slow
V tokenizer-backend : huggingface,fastokens
V tokenizer-worker-num
V detokenizer-worker-num
B skip-tokenizer-init
V load-format : auto,pt,safetensors,npcache,dummy,sharded_state,presharded,gguf,expert_pack
+ bitsandbytes,mistral,layered,flash_rl,remote,remote_instance,fastsafetensors,private
+ runai_streamer
V model-loader-extra-config
B trust-remote-code
V context-length
B is-embedding
B enable-multimodal
V revision
V model-impl
V model-config-parser
V json-model-override-args
V dtype : auto,half,float16,bfloat16,float,float32
V quantization : awq,fp8,mxfp8,gptq,marlin,gptq_marlin,awq_marlin,bitsandbytes,gguf,modelopt
+ modelopt_fp8,modelopt_fp4,nvfp4_online,modelopt_mixed,petit_nvfp4,w8a8_int8,w8a8_fp8,moe_wna16
+ w4afp8,mxfp4,auto-round,auto-round-int8,compressed-tensors,modelslim,mxfp_w4a8,quark
+ quark_int4fp8_moe,quark_mxfp4,mlx_q4,mlx_q8,unquant,humming
V quantization-param-path
V kv-cache-dtype : auto,fp8_e5m2,fp8_e4m3,mxfp8,bf16,bfloat16,nvfp4,fp4_mx_block16,fp4_e2m1
B enable-fp32-lm-head
V modelopt-quant
V modelopt-checkpoint-restore-path
V modelopt-checkpoint-save-path
V modelopt-export-path
B quantize-and-serve
V rl-quant-profile
B enable-tf32-matmul
V mem-fraction-static
V max-running-requests
V max-queued-requests
V max-total-tokens
V chunked-prefill-size
V prefill-decode-interval
B enable-dynamic-chunking
V max-prefill-tokens
V prefill-max-requests
V schedule-policy : lpm,random,fcfs,dfs-weight,lof,priority,routing-key
B enable-priority-scheduling
B disable-priority-preemption
V default-priority-value
B abort-on-priority-when-disabled
B schedule-low-priority-values-first
V priority-scheduling-preemption-threshold
V retraction-policy : length,priority
V schedule-conservativeness
V page-size
V c128-page-size
V swa-full-tokens-ratio
B disable-hybrid-swa-memory
V radix-eviction-policy : lru,lfu,slru,priority
B prefill-only-disable-kv-cache
B disable-radix-cache
B enable-page-major-kv-layout
B enable-unified-memory
B disable-chunked-prefix-cache
B disable-overlap-schedule
V num-continuous-decode-steps
V scheduler-recv-interval
B enable-mixed-chunk
V nccl-port
V dist-timeout
V dist-init-addr = nccl-init-addr
V gated-launch-port
V nnodes
V node-rank
V tp-size = tensor-parallel-size
V dcp-size = decode-context-parallel-size
V pp-size = pipeline-parallel-size
V pp-max-micro-batch-size
V pp-async-batch-depth
V dp-size = data-parallel-size
V load-balance-method : auto,round_robin,follow_bootstrap_room,total_requests,total_tokens
V attn-cp-size = attention-context-parallel-size
V moe-dp-size = moe-data-parallel-size
V dwdp-size
V dcp-comm-backend : ag_rs,a2a,fi_a2a
O dcp-replicate-q-proj
B enable-prefill-cp
V cp-strategy : zigzag,interleave
B enable-dsa-cache-layer-split
B enable-cp-decode-attn-tp
B enable-dp-attention
B enable-dp-attention-local-control-broadcast
B enable-dp-lm-head
O enable-tp-lm-head-all-to-all
B enable-attn-tp-input-scattered
B enable-shared-experts-attn-tp
B enable-dense-mlp-attn-tp
B disable-attn-tp-gather
B enable-p2p-check
V device
V base-gpu-id
V gpu-id-step
V random-seed
B mlx-enable-sampling
V watchdog-timeout
V soft-watchdog-timeout
B sleep-on-idle
B use-ray
M numa-node
M gc-threshold
V host
V port
V fastapi-root-path
B smg-grpc-mode
B grpc-mode
V grpc-port
V sidecar
V sidecar-args
B skip-server-warmup
V warmups
B enable-http2
V http2-max-concurrent-streams
V ssl-keyfile
V ssl-certfile
V ssl-ca-certs
V ssl-keyfile-password
B enable-ssl-refresh
V api-key
V admin-api-key
V served-model-name
V weight-version
V chat-template
V hf-chat-template-name
V completion-template
V file-storage-path
B enable-cache-report
V reasoning-parser
V default-chat-template-kwargs
B strip-thinking-cache
B enable-strict-thinking
V tool-call-parser
V tool-server
V sampling-defaults : openai,model
V asr-max-buffer-seconds
V asr-max-concurrent-sessions
V preferred-sampling-params
B allow-auto-truncate
V stream-interval
V batch-notify-size
B stream-response-default-include-usage
B incremental-streaming-output
B enable-streaming-session
B enable-session-radix-cache
V log-level
V log-level-http
B log-requests
V log-requests-level : 0,1,2,3
V log-requests-format : text,json
M log-requests-target
M uvicorn-access-log-exclude-prefixes
V crash-dump-folder
B show-time-cost
B enable-metrics
V smg-http-sidecar-port = grpc-http-sidecar-port
B enable-mfu-metrics
B enable-metrics-for-all-schedulers
V load-snapshot-publish-interval
V tokenizer-metrics-custom-labels-header
M tokenizer-metrics-allowed-custom-labels
V extra-metric-labels
M bucket-time-to-first-token
M bucket-inter-token-latency
M bucket-e2e-request-latency
M prompt-tokens-buckets
M generation-tokens-buckets
V gc-warning-threshold-secs
V decode-log-interval
B enable-request-time-stats-logging
V kv-events-config
B enable-forward-pass-metrics
B enable-trace
V trace-modules
V otlp-traces-endpoint
B export-metrics-to-file
V export-metrics-to-file-dir
V constrained-json-whitespace-pattern
B constrained-json-disable-any-whitespace
V attention-backend : triton,torch_native,flex_attention,dsa,nsa,dsv4,compressed,cutlass_mla,fa3
+ fa4,flashinfer,flashmla,trtllm_mla,cutedsl_mla,tokenspeed_mla,trtllm_mha,dual_chunk_flash_attn
+ hpc_ops,minicpm_flashattn,minicpm_flashinfer,aiter,wave,intel_amx,ascend,intel_xpu
V decode-attention-backend : @attention-backend
V prefill-attention-backend : @attention-backend
V sampling-backend : flashinfer,pytorch,ascend
V grammar-backend : xgrammar,outlines,llguidance,none
V radix-cache-backend
V mm-attention-backend : sdpa,fa3,fa4,triton_attn,ascend_attn,aiter_attn,flashinfer_cudnn
+ amx_attn,xpu_attn
V fp8-gemm-backend : auto,deep_gemm,flashinfer_trtllm,flashinfer_cutlass,flashinfer_deepgemm
+ flashinfer_cutedsl,cutlass,triton,aiter
V fp4-gemm-backend : auto,flashinfer_cudnn,flashinfer_cutedsl,flashinfer_cutlass
+ flashinfer_trtllm,marlin
V bf16-gemm-backend : auto,cutedsl,gemv,torch
V dsa-prefill-backend : flashmla_sparse,flashmla_sparse_q8,flashmla_kv,flashmla_auto
+ flashinfer_sparse_mla,fa3,tilelang,aiter,trtllm
V dsv4-prefill-backend : auto,flashmla_sparse,flashmla_sparse_q8
V dsa-decode-backend : @dsa-prefill-backend
V dsa-paged-mqa-logits-backend : auto,deepgemm,cutedsl,aiter
V dsa-topk-backend : sgl-kernel,torch,flashinfer
B disable-flashinfer-autotune
M flashinfer-autotune-skip-ops
V mamba-backend : triton,flashinfer
V cuda-graph-config
V cuda-graph-backend-decode : full,breakable,tc_piecewise,disabled
V cuda-graph-backend-prefill : full,breakable,tc_piecewise,disabled
V cuda-graph-max-bs-decode
V cuda-graph-max-bs-prefill
M cuda-graph-bs-decode
M cuda-graph-bs-prefill
V cuda-graph-tc-compiler : eager,inductor
B disable-prefill-cuda-graph
B disable-decode-cuda-graph
B disable-cuda-graph-padding
B enable-profile-cuda-graph
B enable-cudagraph-gc
B debug-cuda-graph
B enable-layerwise-nvtx-marker
B enable-nccl-nvls
B enable-symm-mem
B triton-attention-reduce-in-fp32
V triton-attention-num-kv-splits
V triton-attention-split-tile-size
B flashinfer-mla-disable-ragged
B enable-fused-qk-norm-rope
B enable-precise-embedding-interpolation
B enable-fused-moe-sum-all-reduce
B enable-deepseek-v4-fp4-indexer
B disable-custom-all-reduce
B enable-mscclpp
B enable-torch-symm-mem
B enable-scattered-sconv
B pre-warm-nccl
B enable-quant-communications
B enforce-disable-flashinfer-allreduce-fusion
V flashinfer-allreduce-fusion-backend : auto,trtllm,mnnvl
B enable-aiter-allreduce-fusion
B enable-torch-compile
B enable-torch-compile-debug-mode
V torch-compile-max-bs
V speculative-algorithm
V speculative-draft-model-path = speculative-draft-model
V speculative-draft-model-revision
V speculative-draft-load-format : @load-format
V speculative-num-steps
V speculative-eagle-topk
V speculative-num-draft-tokens
V speculative-dflash-block-size
V speculative-dspark-block-size
V speculative-dspark-sps-table-path
V speculative-dspark-confidence-sts-path
B speculative-dspark-align-verify-tokens-to-graph-tier
V speculative-accept-threshold-single
V speculative-accept-threshold-acc
B speculative-use-rejection-sampling
V speculative-token-map
V speculative-attention-mode : prefill,decode
V speculative-draft-attention-backend
V speculative-dsa-topk-backend : sgl-kernel,torch,flashinfer
V speculative-draft-kv-cache-dtype : auto,fp8_e5m2,fp8_e4m3,bf16,bfloat16
V speculative-draft-window-size
V speculative-moe-runner-backend : @moe-runner-backend
V speculative-moe-a2a-backend : @moe-a2a-backend
V speculative-draft-model-quantization : @quantization
B speculative-skip-dp-mlp-sync
B enable-multi-layer-eagle
B speculative-adaptive
V speculative-adaptive-config
V decoupled-spec-bind-endpoint
V decoupled-spec-connect-endpoints
V decoupled-spec-rank
V decoupled-spec-role : null,verifier,drafter
V spec-trace-dir
V speculative-ngram-min-bfs-breadth
V speculative-ngram-max-bfs-breadth
V speculative-ngram-match-type : BFS,PROB
V speculative-ngram-max-trie-depth
V speculative-ngram-capacity
V speculative-ngram-external-corpus-path
V speculative-ngram-external-sam-budget
V speculative-ngram-external-corpus-max-tokens
V ep-size = expert-parallel-size, ep
V moe-a2a-backend : none,deepep,mooncake,nixl,mori,ascend_fuseep,flashinfer,megamoe,deepep_v2
+ pplx,ascend_tp
B enable-w4a4-mxfp4-megamoe
V deepep-v2-mode : direct,hybrid
V moe-runner-backend : auto,deep_gemm,triton,triton_kernel,flashinfer_trtllm
+ experimental_sgl_trtllm,flashinfer_trtllm_routed,flashinfer_cutlass,flashinfer_mxfp4
+ flashinfer_cutedsl,cutlass,aiter,marlin,humming,experimental_sgl_marlin,hpc_ops,megamoe
V flashinfer-mxfp4-moe-precision : default,bf16
V deepep-mode : auto,normal,low_latency
V fuseep-mode : 1,2
V deepep-dispatcher-output-dtype : auto,bf16,fp8,int8,nvfp4
V ep-num-redundant-experts
V ep-dispatch-algorithm : static,dynamic,fake,lp
V init-expert-location
B enable-eplb
V eplb-algorithm
V eplb-rebalance-num-iterations
V eplb-rebalance-layers-per-chunk
V eplb-min-rebalancing-utilization-threshold
V expert-distribution-recorder-mode : stat,stat_approx,per_pass,per_token
V expert-distribution-recorder-buffer-size
V expert-balancedness-report-mode : off,server_log,prometheus,both
V deepep-config
V moe-dense-tp-size
V elastic-ep-backend : none,mooncake,nixl
B enable-elastic-expert-backup
V mooncake-ib-device
B enable-waterfill
V elastic-ep-join-mode : scale,recover
V elastic-ep-join-rank-offset
V elastic-ep-initial-size
V max-ep-size
V elastic-ep-scale-timeout
B elastic-ep-rejoin
B disable-flashinfer-cutlass-moe-fp4-allgather
B disable-shared-experts-fusion
B enforce-shared-experts-fusion
V max-mamba-cache-size
V mamba-ssm-dtype : float32,bfloat16,float16
V mamba-max-states-per-path
B enable-mamba-cache-stochastic-rounding
V mamba-cache-philox-rounds
V mamba-full-memory-ratio
V mamba-radix-cache-strategy : auto,no_buffer,extra_buffer,extra_buffer_lazy
V mamba-track-interval
B enable-int8-mamba-checkpoint
V int8-mamba-ckpt-size
V linear-attn-backend : triton,cutedsl,flashinfer,flashkda,nvidia_kda,ptx_kda,helion,intel_xpu
V linear-attn-decode-backend : @linear-attn-backend
V linear-attn-prefill-backend : @linear-attn-backend
V linear-attn-verify-backend
B enable-linear-replayssm
V linear-replayssm-cache-len
B enable-linear-replayssm-spec
B enable-hierarchical-cache
V hicache-host-memory-mode : cache,buffer_only
V hicache-ratio
V hicache-size
V hicache-write-policy : write_back,write_through,write_through_selective
V hicache-io-backend : direct,kernel,kernel_ascend
V hicache-mem-layout : layer_first,page_first,page_first_direct,page_first_kv_split,page_head
V hicache-storage-backend : file,sim,mooncake,hf3fs,nixl,aibrix,dynamic,eic,simm,mori,shm,kvcc
V hicache-storage-prefetch-policy : best_effort,wait_complete,timeout
V hicache-storage-backend-extra-config
B enable-hisparse
V hisparse-config = hierarchical-sparse-attention-extra-config
B enable-broadcast-mm-inputs-process
B enable-prefix-mm-cache
B mm-enable-dp-encoder
V mm-process-config
V mm-processor-worker-num
V mm-io-worker-num
M allowed-media-domains
V media-url-max-file-size-mb
V mm-preprocess-cache-size-mb
B trust-mm-content-hashes
V limit-mm-data-per-request
B enable-mm-global-cache
V image-processor-backend : auto,torchvision,pil
V mm-global-cache-backend : mooncake
B disable-fast-image-processor
V mm-feature-transport : cpu,cuda_ipc,cuda_vmm
B keep-mm-feature-on-device
B enable-lora
B enable-lora-overlap-loading
V max-lora-rank
M lora-target-modules
M lora-paths
V max-loaded-loras
V max-loras-per-batch
V lora-eviction-policy : lru,fifo
V lora-backend : triton,csgmv,ascend,torch_native
V max-lora-chunk-size : 16,32,64,128
O experts-shared-outer-loras
B lora-use-virtual-experts
O lora-strict-loading
V lora-drain-wait-threshold
B enable-two-batch-overlap
B enable-single-batch-overlap
V tbo-token-distribution-threshold
V cpu-offload-gb
V offload-group-size
V offload-num-in-group
V offload-prefetch-step
V offload-mode
B enable-lmcache
V lmcache-config-file
B enable-flexkv
V flexkv-config-file
V kt-weight-path
V kt-method
V kt-cpuinfer
V kt-threadpool-count
V kt-num-gpu-experts
V kt-max-deferred-experts-per-token
V dllm-algorithm
V dllm-algorithm-config
O dllm-fdfo
V disaggregation-mode : null,prefill,decode
V disaggregation-transfer-backend : mooncake,nixl,ascend,fake,mori,mooncake_tcp
V disaggregation-bootstrap-port
V disaggregation-ib-device
B disaggregation-decode-enable-radix-cache
B disaggregation-decode-enable-offload-kvcache
V disaggregation-decode-retraction-backup : cpu_tensor,host_pool
V num-reserved-decode-tokens
V disaggregation-decode-extra-slots
V disaggregation-decode-polling-interval
V optimistic-prefill-attempts
B encoder-only
B language-only
B language-model-only
V encoder-transfer-backend : auto,zmq_to_scheduler,zmq_to_tokenizer,mooncake
M encoder-urls
V encoder-bootstrap-port
M encoder-register-urls
B enable-adaptive-dispatch-to-encoder
B enable-pdmux
V pdmux-config-path
V sm-group-num
V startup-weight-load-mode : serial,overlap
M custom-weight-loader
B weight-loader-disable-mmap
B weight-loader-prefetch-checkpoints
V weight-loader-prefetch-num-threads
B weight-loader-drop-cache-after-load
V remote-instance-weight-loader-seed-instance-ip
V remote-instance-weight-loader-seed-instance-service-port
V remote-instance-weight-loader-send-weights-group-ports
V remote-instance-weight-loader-backend : transfer_engine,nccl,modelexpress
B remote-instance-weight-loader-start-seed-via-transfer-engine
V engine-info-bootstrap-port
V modelexpress-config
V download-dir
Q model-checksum
B delete-ckpt-after-loading
V decrypted-config-file
V decrypted-draft-config-file
B checkpoint-engine-wait-weights-before-ready
B enable-prefill-delayer
V prefill-delayer-max-delay-passes
V prefill-delayer-token-usage-low-watermark
M prefill-delayer-forward-passes-buckets
M prefill-delayer-wait-seconds-buckets
V prefill-delayer-queue-min-ratio
V prefill-delayer-max-delay-ms
V min-free-slots-delay
B enable-deterministic-inference
V rl-on-policy-target : fsdp
V kv-canary : none,log,raise
V kv-canary-real-data
V kv-canary-sweep-interval
B enable-dynamic-batch-tokenizer
V dynamic-batch-tokenizer-batch-size
V dynamic-batch-tokenizer-batch-timeout
B enable-tokenizer-batch-encode
B disable-tokenizer-batch-decode
V debug-tensor-dump-output-folder
M debug-tensor-dump-layers
V debug-tensor-dump-input-file
B enable-memory-saver
B enable-weights-cpu-backup
B enable-draft-weights-cpu-backup
B enable-custom-logit-processor
B enable-return-hidden-states
V return-hidden-states-mode : last,full
B enable-return-routed-experts
B enable-return-indexer-topk
B disable-outlines-disk-cache
B enable-mis
V weight-cache-mode : off,daemon,client
V weight-cache-socket
V weight-cache-timeout
V forward-hooks
V msprobe-dump-config
"""

# Deprecated or renamed spellings. "to" is the flag deploykb compares them as; "registered" says
# whether the framework still accepts the old spelling.
SGLANG_RENAMED = {
    "--fp4-gemm-runner-backend": {
        "to": "--fp4-gemm-backend",
        "registered": False,
        "note": "field name fp4_gemm_runner_backend; the CLI flag is --fp4-gemm-backend",
    },
    "--fp8-gemm-runner-backend": {
        "to": "--fp8-gemm-backend",
        "registered": False,
        "note": "field name fp8_gemm_runner_backend; SGLang v0.5.12 rejects it as unrecognized",
    },
    "--nsa-prefill-backend": {"to": "--dsa-prefill-backend", "registered": True,
                              "note": "deprecated alias (NSA renamed DSA)"},
    "--nsa-decode-backend": {"to": "--dsa-decode-backend", "registered": True,
                             "note": "deprecated alias (NSA renamed DSA)"},
    "--speculative-dflash-draft-window-size": {"to": "--speculative-draft-window-size",
                                               "registered": True, "note": "deprecated alias"},
    "--mamba-scheduler-strategy": {"to": "--mamba-radix-cache-strategy", "registered": True,
                                   "note": "deprecated alias"},
    "--cuda-graph-max-bs": {"to": "--cuda-graph-max-bs-decode", "registered": True,
                            "note": "deprecated alias"},
    "--cuda-graph-bs": {"to": "--cuda-graph-bs-decode", "registered": True,
                        "note": "deprecated alias", "nargs": "+"},
    "--piecewise-cuda-graph-tokens": {"to": "--cuda-graph-bs-prefill", "registered": True,
                                      "note": "deprecated alias", "nargs": "+"},
    "--piecewise-cuda-graph-compiler": {"to": "--cuda-graph-tc-compiler", "registered": True,
                                        "note": "deprecated alias"},
    "--piecewise-cuda-graph-max-tokens": {"to": "--cuda-graph-max-bs-prefill", "registered": True,
                                          "note": "deprecated alias"},
    "--enable-dsa-prefill-context-parallel": {"to": "--enable-prefill-cp", "registered": True,
                                              "note": "deprecated alias"},
    "--enable-nsa-prefill-context-parallel": {"to": "--enable-prefill-cp", "registered": True,
                                              "note": "deprecated alias"},
    "--enable-prefill-context-parallel": {"to": "--enable-prefill-cp", "registered": True,
                                          "note": "deprecated alias"},
    "--enable-gdn-replayssm-spec": {"to": "--enable-linear-replayssm-spec", "registered": True,
                                    "note": "deprecated alias"},
    "--dsa-prefill-cp-mode": {"to": "--cp-strategy", "registered": True,
                              "note": "deprecated; in-seq-split is zigzag, round-robin-split is "
                                      "interleave"},
    "--nsa-prefill-cp-mode": {"to": "--cp-strategy", "registered": True,
                              "note": "deprecated; in-seq-split is zigzag, round-robin-split is "
                                      "interleave"},
    "--prefill-cp-mode": {"to": "--cp-strategy", "registered": True,
                          "note": "deprecated; in-seq-split is zigzag"},
    "--stream-output": {"to": "--incremental-streaming-output", "registered": True,
                        "note": "deprecated alias"},
}

# Flags that are still accepted but deprecated in favour of another setting (kept as their own
# name because the replacement is not a plain rename).
SGLANG_DEPRECATED = {
    "--disable-cuda-graph": {
        "value": False,
        "deprecated": "deprecated in recent SGLang; the replacement is "
                      "--cuda-graph-backend-decode disabled plus --cuda-graph-backend-prefill "
                      "disabled",
        "doc": "Run without CUDA graphs (eager decode). Slower, but the first thing to try when a "
               "crash or NaN appears only with graph capture/replay.",
    },
    "--enable-breakable-cuda-graph": {"value": False,
                                      "deprecated": "use --cuda-graph-backend-prefill breakable"},
    "--disable-piecewise-cuda-graph": {"value": False,
                                       "deprecated": "use --cuda-graph-backend-prefill disabled"},
    "--enforce-piecewise-cuda-graph": {
        "value": False, "deprecated": "use --cuda-graph-backend-prefill tc_piecewise"},
    "--enable-flashinfer-allreduce-fusion": {
        "value": False, "deprecated": "use --flashinfer-allreduce-fusion-backend auto"},
    "--enable-expert-distribution-metrics": {
        "value": False, "deprecated": "removed; use --expert-balancedness-report-mode"},
    "--prefill-round-robin-balance": {"value": False, "deprecated": "deprecated, no effect"},
    "--collect-tokens-histogram": {
        "value": False, "deprecated": "deprecated; histograms come with --enable-metrics"},
}

SGLANG_FLAG_NOTES = {
    "--grpc-mode": "deprecated: use --smg-grpc-mode",
    "--disable-fast-image-processor": "deprecated: use --image-processor-backend pil",
    "--keep-mm-feature-on-device": "deprecated: use --mm-feature-transport cuda_ipc",
    "--elastic-ep-rejoin": "deprecated: use --elastic-ep-join-mode recover",
}

SGLANG_VALUE_ALIASES = {
    "--attention-backend": {"nsa": "dsa", "compressed": "dsv4"},
    "--decode-attention-backend": {"nsa": "dsa", "compressed": "dsv4"},
    "--prefill-attention-backend": {"nsa": "dsa", "compressed": "dsv4"},
    "--fp4-gemm-backend": {"cutlass": "flashinfer_cutlass", "cudnn": "flashinfer_cudnn",
                           "trtllm": "flashinfer_trtllm"},
    "--cp-strategy": {"in-seq-split": "zigzag", "round-robin-split": "interleave"},
}

SGLANG_DOCS = {
    "--model-path": "Model weights: local folder or Hugging Face repo id.",
    "--tp-size": "Tensor-parallel degree (number of GPUs the layers are split over).",
    "--dp-size": "Data-parallel degree.",
    "--ep-size": "Expert-parallel degree for MoE layers.",
    "--pp-size": "Pipeline-parallel degree.",
    "--quantization": "Quantization method of the checkpoint or of online quantization.",
    "--kv-cache-dtype": "Storage type of the KV cache; auto follows the model dtype.",
    "--dtype": "Dtype of weights and activations.",
    "--attention-backend": "Attention kernel family used for prefill and decode.",
    "--prefill-attention-backend": "Attention kernels for prefill only (overrides "
                                   "--attention-backend there).",
    "--decode-attention-backend": "Attention kernels for decode only (overrides "
                                  "--attention-backend there).",
    "--moe-runner-backend": "Kernel family that runs the MoE expert GEMMs.",
    "--moe-a2a-backend": "All-to-all communication backend for expert parallelism.",
    "--fp8-gemm-backend": "Kernel for block-wise FP8 linear layers (DeepGEMM, CUTLASS, FlashInfer "
                          "variants, Triton); cutlass is the suggested choice on SM120.",
    "--fp4-gemm-backend": "Kernel for NVFP4 linear layers (FlashInfer cuDNN, CUTLASS, CuTe DSL, "
                          "TRT-LLM, or Marlin weight-only).",
    "--sampling-backend": "Sampler implementation (FlashInfer kernels or plain PyTorch).",
    "--mem-fraction-static": "Share of GPU memory reserved up front for weights plus the KV "
                             "cache pool; lower it on out-of-memory errors.",
    "--disable-custom-all-reduce": "Use NCCL instead of SGLang's custom all-reduce kernel.",
    "--disable-overlap-schedule": "Turn off the scheduler that overlaps CPU scheduling with GPU "
                                  "work.",
    "--disable-radix-cache": "Turn off prefix caching (RadixAttention).",
    "--enable-torch-compile": "Compile the model with torch.compile (experimental).",
    "--enable-dp-attention": "Data-parallel attention with tensor-parallel FFN/MoE.",
    "--cuda-graph-max-bs-decode": "Largest decode batch size captured in a CUDA graph.",
    "--cuda-graph-backend-decode": "CUDA graph mode for decode (disabled turns graphs off).",
    "--cuda-graph-backend-prefill": "CUDA graph mode for prefill (disabled turns graphs off).",
    "--disable-prefill-cuda-graph": "Turn off the prefill-phase CUDA graph only.",
    "--disable-decode-cuda-graph": "Turn off the decode-phase CUDA graph only.",
    "--speculative-algorithm": "Speculative decoding algorithm (EAGLE, EAGLE3, NEXTN, "
                               "STANDALONE, NGRAM, ...).",
    "--speculative-num-steps": "Draft steps per speculative round.",
    "--speculative-eagle-topk": "Tokens branched per draft step (EAGLE tree width).",
    "--speculative-num-draft-tokens": "Draft tokens verified per round.",
    "--dsa-prefill-backend": "Sparse-attention (DSA, formerly NSA) kernels for prefill.",
    "--dsa-decode-backend": "Sparse-attention (DSA, formerly NSA) kernels for decode.",
    "--disable-flashinfer-autotune": "Skip FlashInfer kernel autotuning at start-up.",
    "--enforce-disable-flashinfer-allreduce-fusion": "Never fuse all-reduce with "
                                                     "residual+RMSNorm via FlashInfer.",
    "--chunked-prefill-size": "Tokens per prefill chunk; -1 disables chunked prefill.",
    "--context-length": "Maximum context length (defaults to the model config).",
    "--max-running-requests": "Cap on concurrently running requests.",
    "--trust-remote-code": "Allow model code from the Hub repository.",
    "--page-size": "Tokens per KV cache page.",
}

SGLANG_ENV = {
    "SGLANG_ENABLE_JIT_DEEPGEMM": "Use JIT-compiled DeepGEMM kernels for FP8 GEMMs where "
                                  "supported (default on).",
    "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "Precompile DeepGEMM kernels at start-up (default on).",
    "SGLANG_JIT_DEEPGEMM_COMPILE_WORKERS": "Parallel workers for DeepGEMM precompilation.",
    "SGLANG_DG_CACHE_DIR": "Cache directory for compiled DeepGEMM kernels.",
    "SGLANG_DEEPGEMM_SANITY_CHECK": "Extra correctness checks around DeepGEMM calls.",
    "SGLANG_CACHE_DIR": "Root of SGLang's kernel caches (default ~/.cache/sglang).",
    "SGLANG_TRTLLM_MOE_PDL_MAX_TOKENS": "Launch TRT-LLM MoE grouped GEMMs with PDL only up to this "
                                        "many tokens.",
    "SGLANG_FORCE_COARSE_WAR_BARRIER": "Overlap scheduler: wait for the whole forward instead of "
                                       "the read-done event.",
    "SGLANG_ENABLE_WAR_BARRIER": "Force the overlap scheduler's write-after-read barrier on "
                                 "non-CUDA platforms.",
    "SGLANG_FLASHINFER_WORKSPACE_SIZE": "FlashInfer workspace size in bytes.",
    "SGLANG_FLASHINFER_AUTOTUNE_CACHE": "Reuse cached FlashInfer autotuning results.",
    "SGLANG_FLASHINFER_MOE_FUSED_FINALIZE": "Fused atomic finalize in FlashInfer CUTLASS/CuTe DSL "
                                            "MoE.",
    "SGLANG_IS_FLASHINFER_AVAILABLE": "Set false to keep SGLang from using FlashInfer.",
    "SGLANG_SM120_FLASHMLA_BACKEND": "FlashMLA decode implementation on SM120 (flashinfer, "
                                     "triton or torch).",
    "SGLANG_USE_SGL_FA3_KERNEL": "Use sgl-kernel's FlashAttention-3 build.",
    "SGLANG_USE_AITER": "Use AMD AITER kernels (ROCm).",
    "SGLANG_DSA_FUSE_TOPK": "Fuse the DSA indexer top-k (GLM-5, DeepSeek V3.2).",
    "SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD": "KV length below which DSA prefill uses "
                                                      "dense attention.",
    "SGLANG_ENABLE_TORCH_COMPILE": "Enable torch.compile paths.",
    "SGLANG_ENABLE_DETERMINISTIC_INFERENCE": "Batch-invariant deterministic kernels.",
    "SGLANG_SANITIZE_NAN_LOGITS": "Replace NaN logits before sampling and log a warning.",
    "SGLANG_ENABLE_ASYNC_ASSERT": "Asynchronous NaN/Inf/out-of-bounds probes (debugging).",
    "SGLANG_CUDA_COREDUMP": "Write CUDA core dumps on device exceptions.",
    "SGLANG_MOE_PADDING": "Pad MoE weights for kernel alignment.",
    "SGLANG_FORCE_FP8_MARLIN": "Force FP8 Marlin kernels.",
    "SGLANG_INT4_WEIGHT": "INT4 weight quantization.",
    "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "DeepEP per-rank dispatch buffer capacity.",
    "SGLANG_DEEPEP_BF16_DISPATCH": "Dispatch in BF16 with DeepEP (superseded by "
                                   "--deepep-dispatcher-output-dtype bf16).",
    "SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH": "Run speculative draft-extend eagerly.",
    "SGLANG_USE_BREAKABLE_CUDA_GRAPH": "Use breakable CUDA graphs.",
    "SGLANG_MAMBA_SSM_DTYPE": "Dtype of Mamba/GDN SSM states.",
    "SGLANG_MAMBA_CONV_DTYPE": "Dtype of Mamba/GDN convolution states.",
    "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2": "Use the second-generation custom all-reduce.",
    "SGLANG_WARMUP_TIMEOUT": "Seconds a warm-up batch may take before the server gives up.",
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "Allow --context-length above the model's "
                                                 "configured maximum.",
    "SGLANG_DISABLE_OUTLINES_DISK_CACHE": "Disable the outlines grammar disk cache.",
    "SGLANG_SET_CPU_AFFINITY": "Pin worker processes to CPU cores.",
    "SGLANG_TORCH_PROFILER_DIR": "Output directory of the torch profiler.",
    "SGLANG_ENABLE_SPLITKV_VERIFY": "Split-KV kernel for EAGLE verify on the Triton backend.",
    "SGLANG_OPT_FP8_WO_A_GEMM": "FP8 GEMM for the DeepSeek-V4 attention output projection.",
}

SGLANG_ENV_RENAMED = {
    "SGLANG_NSA_FUSE_TOPK": "SGLANG_DSA_FUSE_TOPK",
    "SGLANG_NSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD": (
        "SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD"
    ),
    "SGLANG_NSA_HIP_DISABLE_PRESHUFFLE": "SGLANG_DSA_HIP_DISABLE_PRESHUFFLE",
    "SGLANG_USE_JIT_ALL_REDUCE": "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2",
    "SGLANG_GC_LOG": "SGLANG_LOG_GC",
    "SGLANG_ENABLE_THINKING": "SGLANG_DEFAULT_THINKING",
}

SGLANG_ENV_REPLACED_BY_FLAG = {
    "SGLANG_CUTLASS_MOE": "--moe-runner-backend cutlass",
    "SGLANG_FLASHINFER_FP4_GEMM_BACKEND": "--fp4-gemm-backend",
    "SGLANG_ENABLE_GRPC": "--grpc-port",
    "SGLANG_SCHEDULER_DECREASE_PREFILL_IDLE": "--enable-prefill-delayer",
}

# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------

VLLM_SOURCE = (
    "vllm-project/vllm vllm/engine/arg_utils.py @99d7eb5d (EngineArgs.add_cli_args: flag names, "
    "short aliases -tp -pp -dp -dcp -q -O ...; bool fields use BooleanOptionalAction so --no-X "
    "works; list fields take several values); vllm/entrypoints/openai/cli_args.py @00522333 "
    "(server/frontend flags); vllm/utils/argparse_utils.py @00da11e3 (underscores in flag names "
    "become dashes; -O<n> is --optimization-level; `vllm serve --model X` is moved to the "
    "positional model); vllm/config/kernel.py @00634b8a (--moe-backend choices); "
    "vllm/v1/attention/backends/registry.py @0033bf03 (attention backend names); "
    "vllm/config/cache.py @002f10e0 (--kv-cache-dtype choices); vllm/envs.py @001f69f8 "
    "(environment variables); docs.vllm.ai design/attention_backends (v0.20-v0.25: "
    "--attention-backend and -ac/--attention-config.backend); docs.vllm.ai "
    "features/quantization/b12x (--linear-backend, --moe-backend b12x). Choices are the ones "
    "documented in those versions; forks (e.g. 1Cat-vLLM's FLASH_ATTN_V100) add more."
)

VLLM_TABLE = """
V model
V runner
V convert
V task
V tokenizer
V tokenizer-mode : auto,slow,mistral
O trust-remote-code
V dtype : auto,half,float16,bfloat16,float,float32
V seed
V hf-config-path
V allowed-local-media-path
M allowed-media-domains
V revision
V code-revision
V rope-scaling
V rope-theta
V tokenizer-revision
V max-model-len
V quantization = -q : aqlm,awq,deepspeedfp,tpu_int8,fp8,ptpc_fp8,fbgemm_fp8,deepgemm_fp8
+ modelopt,modelopt_fp4,marlin,bitblas,gguf,gptq_marlin_24,gptq_marlin,gptq_bitblas,awq_marlin
+ gptq,compressed-tensors,bitsandbytes,qqq,hqq,experts_int8,neuron_quant,ipex,quark,moe_wna16
+ torchao,auto-round,mxfp4
O enforce-eager
V max-logprobs
V logprobs-mode
O disable-sliding-window
O disable-cascade-attn
O skip-tokenizer-init
O enable-prompt-embeds
M served-model-name
V config-format
Q hf-token
V hf-overrides
V pooler-config
V override-pooler-config
V logits-processor-pattern
V generation-config
V override-generation-config
O enable-sleep-mode
V model-impl
V override-attention-dtype
M logits-processors
V io-processor-plugin
V load-format
V download-dir
V safetensors-load-strategy
V model-loader-extra-config
M ignore-patterns
O use-tqdm-on-load
V pt-load-map-location
V reasoning-parser
V guided-decoding-backend
V distributed-executor-backend
V pipeline-parallel-size = -pp
V tensor-parallel-size = -tp
V decode-context-parallel-size = -dcp
V data-parallel-size = -dp
V data-parallel-rank = -dpn
V data-parallel-start-rank = -dpr
V data-parallel-size-local = -dpl
V data-parallel-address = -dpa
V data-parallel-rpc-port = -dpp
V data-parallel-backend = -dpb
O data-parallel-hybrid-lb
O enable-expert-parallel
V all2all-backend
O enable-dbo
V dbo-decode-token-threshold
V dbo-prefill-token-threshold
O disable-nccl-for-dp-synchronization
O enable-eplb
V eplb-config
V expert-placement-strategy
V num-redundant-experts
V eplb-window-size
V eplb-step-interval
O eplb-log-balancedness
V max-parallel-loading-workers
O ray-workers-use-nsight
O disable-custom-all-reduce
V worker-cls
V worker-extension-cls
B enable-multimodal-encoder-data-parallel
V block-size
V gpu-memory-utilization
V kv-cache-memory-bytes
V swap-space
V kv-cache-dtype : auto,float16,bfloat16,fp8,fp8_e4m3,fp8_e5m2,fp8_inc,fp8_ds_mla,nvfp4_ds_mla
+ turboquant_k8v4,turboquant_4bit_nc,turboquant_k3v4_nc,turboquant_3bit_nc,int4_per_token_head
+ int8_per_token_head,fp8_per_token_head,nvfp4,nvfp4_4over6
V num-gpu-blocks-override
O enable-prefix-caching
V prefix-caching-hash-algo : sha256,sha256_cbor,xxhash,xxhash_cbor
V cpu-offload-gb
O calculate-kv-scales
O kv-sharing-fast-prefill
V mamba-cache-dtype : auto,float32,float16,bfloat16
V mamba-ssm-cache-dtype : auto,float32,float16,bfloat16
V mamba-block-size
V limit-mm-per-prompt
O enable-mm-embeds
V media-io-kwargs
V mm-processor-kwargs
V mm-processor-cache-gb
B disable-mm-preprocessor-cache
V mm-processor-cache-type
V mm-shm-cache-max-object-size-mb
V mm-encoder-tp-mode
V mm-encoder-attn-backend
O interleave-mm-strings
O skip-mm-profiling
V video-pruning-rate
O enable-lora
V max-loras
V max-lora-rank
V lora-extra-vocab-size
V lora-dtype
V max-cpu-loras
O fully-sharded-loras
V default-mm-loras
V show-hidden-metrics-for-version
V otlp-traces-endpoint
M collect-detailed-traces
V max-num-batched-tokens
V max-num-seqs
V max-num-partial-prefills
V max-long-partial-prefills
V long-prefill-token-threshold
V num-lookahead-slots
V scheduling-policy : fcfs,priority
O enable-chunked-prefill
O disable-chunked-mm-input
V scheduler-cls
O disable-hybrid-kv-cache-manager
O async-scheduling
M cudagraph-capture-sizes
V max-cudagraph-capture-size
V speculative-config
V kv-transfer-config
V kv-events-config
V compilation-config = -O
V optimization-level
V additional-config
V structured-outputs-config
B disable-log-stats
B aggregate-engine-logging
V attention-backend : FLASH_ATTN,FLASH_ATTN_DIFFKV,TRITON_ATTN,ROCM_ATTN,ROCM_AITER_MLA
+ ROCM_AITER_TRITON_MLA,ROCM_AITER_FA,ROCM_AITER_MLA_SPARSE,XPU_MLA_SPARSE,TORCH_SDPA,FLASHINFER
+ FLASHINFER_MLA,FLASHINFER_MLA_SPARSE,TRITON_MLA,TRITON_MLA_SPARSE,CUTLASS_MLA,FLASHMLA
+ FLASHMLA_SPARSE,FLASH_ATTN_MLA,NO_ATTENTION,FLEX_ATTENTION,TREE_ATTN,ROCM_AITER_UNIFIED_ATTN
+ CPU_ATTN,TURBOQUANT,CUSTOM
V attention-config = -ac
V kernel-config
V moe-backend : auto,triton,deep_gemm,deep_gemm_mega_moe,cutlass,flashinfer_trtllm
+ flashinfer_cutlass,flashinfer_cutedsl,marlin,aiter,emulation,b12x
V linear-backend
V mxfp4-backend
M lora-modules
V chat-template
V chat-template-content-format
O trust-request-chat-template
V default-chat-template-kwargs
V response-role
O return-tokens-as-token-ids
O enable-auto-tool-choice
O exclude-tools-when-tool-choice-none
V tool-call-parser
V tool-parser-plugin
V tool-server
V log-config-file
V max-log-len
O enable-prompt-tokens-details
O enable-server-load-tracking
O enable-force-include-usage
O enable-tokenizer-info-endpoint
O enable-log-outputs
B enable-log-requests
B disable-log-requests
V host
V port
V uds
V uvicorn-log-level : critical,error,warning,info,debug,trace
O disable-uvicorn-access-log
V disable-access-log-for-endpoints
O allow-credentials
V allowed-origins
V allowed-methods
V allowed-headers
M api-key
V ssl-keyfile
V ssl-certfile
V ssl-ca-certs
O enable-ssl-refresh
V ssl-cert-reqs
V root-path
M middleware
O enable-request-id-headers
O disable-fastapi-docs
V config
"""

VLLM_RENAMED = {
    "--cuda-graph-sizes": {"to": "--cudagraph-capture-sizes", "registered": True,
                           "note": "deprecated alias", "nargs": "+"},
}

VLLM_FLAG_NOTES = {
    "--task": "deprecated: use --runner / --convert",
    "--guided-decoding-backend": "deprecated (structured outputs config replaces it)",
    "--num-redundant-experts": "deprecated: use --eplb-config",
    "--eplb-window-size": "deprecated: use --eplb-config",
    "--eplb-step-interval": "deprecated: use --eplb-config",
    "--eplb-log-balancedness": "deprecated: use --eplb-config",
    "--disable-mm-preprocessor-cache": "deprecated: use --mm-processor-cache-gb 0",
    "--enable-multimodal-encoder-data-parallel": "deprecated: use --mm-encoder-tp-mode data",
    "--override-pooler-config": "deprecated: use --pooler-config",
    "--mxfp4-backend": "seen in a reported vLLM image launch (spark-vllm-mxfp4); not in the "
                       "upstream arguments read",
    "--linear-backend": "documented for b12x kernels (docs.vllm.ai b12x page)",
    "--disable-log-requests": "older releases; newer ones log requests only with "
                              "--enable-log-requests",
}

VLLM_DOCS = {
    "--tensor-parallel-size": "Tensor-parallel degree (GPUs the layers are split over).",
    "--pipeline-parallel-size": "Pipeline-parallel degree.",
    "--data-parallel-size": "Data-parallel degree.",
    "--enforce-eager": "Never capture CUDA graphs; run the model eagerly. Slower, but rules out "
                       "graph capture/replay bugs.",
    "--quantization": "Quantization method; normally read from the checkpoint.",
    "--kv-cache-dtype": "Storage type of the KV cache; fp8 means fp8_e4m3.",
    "--attention-backend": "Attention backend (replaces the VLLM_ATTENTION_BACKEND variable in "
                           "recent releases).",
    "--moe-backend": "Kernel family for MoE expert GEMMs.",
    "--linear-backend": "Kernel family for quantized linear layers.",
    "--gpu-memory-utilization": "Share of GPU memory vLLM may use for weights, activations and "
                                "the KV cache.",
    "--max-model-len": "Maximum context length; lower it when the KV cache does not fit.",
    "--max-num-seqs": "Cap on sequences per batch.",
    "--max-num-batched-tokens": "Token budget per scheduler step.",
    "--disable-custom-all-reduce": "Use NCCL instead of vLLM's custom all-reduce kernel.",
    "--enable-prefix-caching": "Automatic prefix caching (--no-enable-prefix-caching turns it "
                               "off).",
    "--enable-chunked-prefill": "Chunked prefill (--no-enable-chunked-prefill turns it off).",
    "--compilation-config": "torch.compile / CUDA graph settings as JSON or dotted keys "
                            "(-O.cudagraph_mode=PIECEWISE).",
    "--async-scheduling": "Overlap CPU scheduling with GPU execution.",
    "--dtype": "Dtype of weights and activations.",
    "--trust-remote-code": "Allow model code from the Hub repository.",
    "--speculative-config": "Speculative decoding settings as JSON.",
    "--kv-transfer-config": "KV transfer connector settings (disaggregated prefill) as JSON.",
}

VLLM_ENV = {
    "VLLM_ATTENTION_BACKEND": "Attention backend by name (FLASH_ATTN, FLASHINFER, TRITON_ATTN, "
                              "...); recent releases use --attention-backend instead.",
    "VLLM_USE_FLASHINFER_SAMPLER": "1/0: use or avoid the FlashInfer top-k/top-p sampler.",
    "VLLM_USE_DEEP_GEMM": "1/0: use DeepGEMM for FP8 block-quantized GEMMs.",
    "VLLM_MOE_DP_CHUNK_SIZE": "Tokens per chunk when MoE runs with data parallelism.",
    "VLLM_USE_FLASHINFER_MOE_FP4": "Use FlashInfer MoE kernels for NVFP4 experts.",
    "VLLM_USE_FLASHINFER_MOE_FP8": "Use FlashInfer MoE kernels for FP8 experts.",
    "VLLM_FLASHINFER_MOE_BACKEND": "FlashInfer MoE kernel flavour (e.g. throughput, latency, "
                                   "masked_gemm).",
    "VLLM_NVFP4_GEMM_BACKEND": "NVFP4 linear kernel: flashinfer-cudnn, flashinfer-trtllm or "
                               "flashinfer-cutlass (vllm-project/vllm#26107).",
    "VLLM_WORKER_MULTIPROC_METHOD": "How worker processes start: fork or spawn.",
    "VLLM_USE_V1": "1/0: V1 engine (older releases).",
    "VLLM_ALL2ALL_BACKEND": "All-to-all backend for expert parallelism (older releases; now "
                            "--all2all-backend).",
    "VLLM_USE_TRITON_FLASH_ATTN": "Use the Triton flash-attention kernel (ROCm).",
    "VLLM_FLASH_ATTN_VERSION": "Force FlashAttention 2 or 3.",
    "VLLM_USE_CUDNN_PREFILL": "cuDNN prefill attention (MLA).",
    "VLLM_MLA_DISABLE": "Disable MLA attention for MLA models.",
    "VLLM_FUSED_MOE_CHUNK_SIZE": "Chunk size of the fused MoE kernel.",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "Run the V1 engine core in its own process.",
    "VLLM_HOST_IP": "IP of this node for distributed runs.",
    "VLLM_PORT": "Base port for vLLM's internal communication.",
    "VLLM_LOGGING_LEVEL": "Log level (INFO by default).",
    "VLLM_CACHE_ROOT": "Cache root (default ~/.cache/vllm).",
    "VLLM_SKIP_P2P_CHECK": "Trust the driver's peer-to-peer report instead of testing it.",
    "VLLM_DISABLED_KERNELS": "Comma-separated custom ops to disable.",
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "Allow --max-model-len above the model's limit.",
    "VLLM_ENGINE_ITERATION_TIMEOUT_S": "Seconds an engine step may take.",
    "VLLM_RPC_TIMEOUT": "RPC timeout between front end and engine (ms).",
    "VLLM_MARLIN_USE_ATOMIC_ADD": "Atomic adds in Marlin kernels.",
    "VLLM_COMPUTE_NANS_IN_LOGITS": "Count NaNs in logits (debugging).",
    "VLLM_USE_NVFP4_CT_EMULATIONS": "Emulate NVFP4 compressed-tensors kernels.",
    "VLLM_NCCL_SO_PATH": "Path of the NCCL library to load.",
    "VLLM_ROCM_USE_AITER": "Use AMD AITER kernels (ROCm).",
    "VLLM_KV_CACHE_LAYOUT": "Force the KV cache layout (NHD or HND).",
    "VLLM_B12X_MOE_FP4_FORCE_A16": "b12x MoE: force BF16 activations for FP4 weights.",
    "VLLM_DEEPEP_BUFFER_SIZE_MB": "DeepEP buffer size (seen in vLLM DeepEP launches).",
    "VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL": "DeepEP low-latency mode over MNNVL (seen in vLLM DeepEP "
                                         "launches).",
}

# ---------------------------------------------------------------------------------------------
# TensorRT-LLM
# ---------------------------------------------------------------------------------------------

TRTLLM_SOURCE = (
    "nvidia.github.io/TensorRT-LLM commands/trtllm-serve (0.18.2, 0.19.0rc0, 0.20.0rc1, "
    "1.0.0rc6): trtllm-serve options, written with underscores; llm-api/reference/MoeConfig "
    "(moe_config.backend choices); LLM-API YAML keys as passed through --extra_llm_api_options "
    "(older 0.19/0.20 PyTorch-backend keys marked as such)."
)

TRTLLM_TABLE = """
V tokenizer
V host
V port
V backend : pytorch,tensorrt,trt,_autodeploy
V max_beam_width
V max_batch_size
V max_num_tokens
V max_seq_len
V tp_size
V pp_size
V ep_size
V gpus_per_node
V kv_cache_free_gpu_memory_fraction
B trust_remote_code
V extra_llm_api_options
V config
V reasoning_parser
V num_postprocess_workers
V log_level
V served_model_name
V custom_tokenizer
B grpc
"""

# Keys of the LLM-API YAML file (written ``key: value`` in findings).
TRTLLM_CONFIG = {
    "enable_chunked_prefill": "Chunked prefill on/off.",
    "enable_attention_dp": "Data-parallel attention.",
    "disable_overlap_scheduler": "Turn off the overlap scheduler.",
    "cuda_graph_config": "CUDA graph settings (null disables CUDA graphs).",
    "cuda_graph_config.batch_sizes": "Batch sizes captured in CUDA graphs.",
    "cuda_graph_config.max_batch_size": "Largest captured batch size.",
    "cuda_graph_config.enable_padding": "Pad batches up to a captured size.",
    "kv_cache_config.free_gpu_memory_fraction": "Share of free GPU memory given to the KV cache.",
    "kv_cache_config.dtype": "KV cache dtype.",
    "kv_cache_config.enable_block_reuse": "KV cache block reuse (prefix caching).",
    "moe_config.backend": "MoE backend (AUTO, CUTLASS, CUTEDSL, TRTLLM, DEEPGEMM, DENSEGEMM, "
                          "VANILLA, TRITON, MARLIN, MEGAMOE_DEEPGEMM, MEGAMOE_CUTEDSL).",
    "attn_backend": "Attention backend of the PyTorch flow.",
    "speculative_config": "Speculative decoding settings.",
    "print_iter_log": "Log every iteration.",
    "stream_interval": "Tokens between streamed chunks.",
    "pytorch_backend_config.enable_overlap_scheduler": "0.19/0.20 PyTorch-backend key for the "
                                                       "overlap scheduler.",
    "pytorch_backend_config.use_cuda_graph": "0.19/0.20 PyTorch-backend key for CUDA graphs.",
    "cuda_graph_padding_enabled": "0.19/0.20 key: pad batches to captured CUDA graph sizes.",
    "cuda_graph_batch_sizes": "0.19/0.20 key: CUDA graph batch sizes.",
    "use_cuda_graph": "0.19/0.20 key: use CUDA graphs.",
    "enable_overlap_scheduler": "0.19/0.20 key: overlap scheduler.",
}

TRTLLM_DOCS = {
    "--tp_size": "Tensor-parallel degree.",
    "--pp_size": "Pipeline-parallel degree.",
    "--ep_size": "Expert-parallel degree.",
    "--backend": "Runtime: pytorch (default in recent releases), tensorrt, or _autodeploy.",
    "--extra_llm_api_options": "YAML file with further LLM-API settings.",
    "--kv_cache_free_gpu_memory_fraction": "Share of free GPU memory (after weights) for the KV "
                                           "cache.",
    "--max_batch_size": "Cap on scheduled requests.",
    "--max_seq_len": "Maximum tokens per request (prompt plus output).",
}

# ---------------------------------------------------------------------------------------------
# Framework-neutral environment variables
# ---------------------------------------------------------------------------------------------

COMMON_ENV_SOURCE = (
    "NVIDIA NCCL environment variable reference (docs.nvidia.com/deeplearning/nccl), PyTorch CUDA "
    "semantics (PYTORCH_CUDA_ALLOC_CONF), CUDA toolkit documentation (CUDA_VISIBLE_DEVICES, "
    "CUDA_LAUNCH_BLOCKING), NVSHMEM and Hugging Face Hub documentation."
)

COMMON_ENV = {
    "CUDA_VISIBLE_DEVICES": "GPUs visible to the process.",
    "CUDA_LAUNCH_BLOCKING": "1 makes kernel launches synchronous, so errors point at the right "
                            "kernel (slow; debugging only).",
    "CUDA_DEVICE_MAX_CONNECTIONS": "Hardware work queues per device.",
    "PYTORCH_CUDA_ALLOC_CONF": "PyTorch CUDA caching-allocator options, e.g. "
                               "expandable_segments:True.",
    "TORCH_CUDA_ARCH_LIST": "GPU architectures to build/JIT kernels for.",
    "NCCL_P2P_DISABLE": "1 disables NCCL peer-to-peer transport (NVLink/PCIe P2P).",
    "NCCL_P2P_LEVEL": "Maximum topology distance at which NCCL uses P2P (LOC, NVL, PIX, PXB, PHB, "
                      "SYS).",
    "NCCL_IB_DISABLE": "1 disables InfiniBand/RoCE in NCCL.",
    "NCCL_SHM_DISABLE": "1 disables NCCL shared-memory transport.",
    "NCCL_DEBUG": "NCCL log level (WARN, INFO, TRACE).",
    "NCCL_SOCKET_IFNAME": "Network interfaces NCCL may use.",
    "NCCL_NVLS_ENABLE": "NVLink SHARP (NVLS) collectives on/off.",
    "NCCL_CUMEM_ENABLE": "cuMem-based NCCL buffers on/off.",
    "NCCL_ALGO": "Force NCCL collective algorithms.",
    "NCCL_PROTO": "Force NCCL protocols.",
    "NVSHMEM_IB_ENABLE_IBGDA": "NVSHMEM GPU-initiated InfiniBand (used by DeepEP).",
    "HF_TOKEN": "Hugging Face access token.",
    "HF_HOME": "Hugging Face cache root.",
    "HF_HUB_OFFLINE": "1 forbids Hub downloads.",
    "OMP_NUM_THREADS": "CPU threads per process.",
    "TRITON_CACHE_DIR": "Triton kernel cache directory.",
    "TORCHINDUCTOR_CACHE_DIR": "TorchInductor cache directory.",
    "FLASHINFER_WORKSPACE_BASE": "Base directory of FlashInfer's JIT cache.",
    "TRTLLM_ENABLE_PDL": "TensorRT-LLM: programmatic dependent launch on/off.",
}

# ---------------------------------------------------------------------------------------------
# Cross-framework equivalents
# ---------------------------------------------------------------------------------------------
# "members": the flag per framework ("env:NAME" for an environment variable, "config:key" for a
# TensorRT-LLM YAML key). "values": rows of equivalent values (null = the switch is on, "false" =
# the switch is off); without "values" the value passes through unchanged. "approximate": the
# two settings overlap but do not mean exactly the same thing.

# SGLang --attention-backend values and vLLM's names for the same kernels (the flag, and the
# VLLM_ATTENTION_BACKEND variable of older releases, take the same names)
ATTENTION_BACKEND_VALUES = [
    {"sglang": "triton", "vllm": "TRITON_ATTN"},
    {"sglang": "flashinfer", "vllm": "FLASHINFER"},
    {"sglang": "fa3", "vllm": "FLASH_ATTN"},
    {"sglang": "flex_attention", "vllm": "FLEX_ATTENTION"},
    {"sglang": "flashmla", "vllm": "FLASHMLA"},
    {"sglang": "cutlass_mla", "vllm": "CUTLASS_MLA"},
    {"sglang": "triton", "vllm": "TRITON_MLA"},
    {"sglang": "flashinfer", "vllm": "FLASHINFER_MLA"},
]

EQUIVALENTS = [
    {"members": {"sglang": "--disable-cuda-graph", "vllm": "--enforce-eager"},
     "note": "both run decode without CUDA graphs"},
    {"members": {"sglang": "--moe-runner-backend", "vllm": "--moe-backend",
                 "tensorrt-llm": "config:moe_config.backend"},
     "values": [
         {"sglang": "auto", "vllm": "auto", "tensorrt-llm": "AUTO"},
         {"sglang": "triton", "vllm": "triton", "tensorrt-llm": "TRITON"},
         {"sglang": "deep_gemm", "vllm": "deep_gemm", "tensorrt-llm": "DEEPGEMM"},
         {"sglang": "cutlass", "vllm": "cutlass", "tensorrt-llm": "CUTLASS"},
         {"sglang": "flashinfer_trtllm", "vllm": "flashinfer_trtllm", "tensorrt-llm": "TRTLLM"},
         {"sglang": "flashinfer_cutlass", "vllm": "flashinfer_cutlass"},
         {"sglang": "flashinfer_cutedsl", "vllm": "flashinfer_cutedsl",
          "tensorrt-llm": "CUTEDSL"},
         {"sglang": "marlin", "vllm": "marlin", "tensorrt-llm": "MARLIN"},
         {"sglang": "aiter", "vllm": "aiter"},
     ]},
    {"members": {"sglang": "--attention-backend", "vllm": "--attention-backend"},
     "values": ATTENTION_BACKEND_VALUES,
     "note": "older vLLM releases take the same names through VLLM_ATTENTION_BACKEND"},
    {"members": {"sglang": "--attention-backend", "vllm": "env:VLLM_ATTENTION_BACKEND"},
     "values": ATTENTION_BACKEND_VALUES},
    {"members": {"sglang": "--tp-size", "vllm": "--tensor-parallel-size",
                 "tensorrt-llm": "--tp_size"}},
    {"members": {"sglang": "--pp-size", "vllm": "--pipeline-parallel-size",
                 "tensorrt-llm": "--pp_size"}},
    {"members": {"sglang": "--dp-size", "vllm": "--data-parallel-size"}},
    {"members": {"sglang": "--ep-size", "tensorrt-llm": "--ep_size"}},
    {"members": {"sglang": "--kv-cache-dtype", "vllm": "--kv-cache-dtype",
                 "tensorrt-llm": "config:kv_cache_config.dtype"},
     "values": [
         {"sglang": "auto", "vllm": "auto", "tensorrt-llm": "auto"},
         {"sglang": "fp8_e4m3", "vllm": "fp8_e4m3", "tensorrt-llm": "fp8"},
         {"sglang": "fp8_e4m3", "vllm": "fp8"},
         {"sglang": "fp8_e5m2", "vllm": "fp8_e5m2"},
         {"sglang": "bf16", "vllm": "bfloat16"},
         {"sglang": "bfloat16", "vllm": "bfloat16"},
         {"sglang": "nvfp4", "vllm": "nvfp4", "tensorrt-llm": "nvfp4"},
     ]},
    {"members": {"sglang": "--disable-custom-all-reduce", "vllm": "--disable-custom-all-reduce"}},
    {"members": {"sglang": "--quantization", "vllm": "--quantization"},
     "note": "method names mostly agree (fp8, awq, gptq, gptq_marlin, modelopt, modelopt_fp4, "
             "compressed-tensors, ...)"},
    {"members": {"sglang": "--mem-fraction-static", "vllm": "--gpu-memory-utilization"},
     "approximate": True,
     "note": "SGLang's fraction covers weights plus the KV pool; vLLM's covers everything vLLM "
             "allocates"},
    {"members": {"sglang": "--context-length", "vllm": "--max-model-len",
                 "tensorrt-llm": "--max_seq_len"}},
    {"members": {"sglang": "--max-running-requests", "vllm": "--max-num-seqs",
                 "tensorrt-llm": "--max_batch_size"}, "approximate": True},
    {"members": {"sglang": "--trust-remote-code", "vllm": "--trust-remote-code",
                 "tensorrt-llm": "--trust_remote_code"}},
    {"members": {"sglang": "--dtype", "vllm": "--dtype"}},
    {"members": {"sglang": "--served-model-name", "vllm": "--served-model-name",
                 "tensorrt-llm": "--served_model_name"}},
    {"members": {"sglang": "--host", "vllm": "--host", "tensorrt-llm": "--host"}},
    {"members": {"sglang": "--port", "vllm": "--port", "tensorrt-llm": "--port"}},
    {"members": {"sglang": "--disable-radix-cache", "vllm": "--enable-prefix-caching",
                 "tensorrt-llm": "config:kv_cache_config.enable_block_reuse"},
     "values": [{"sglang": None, "vllm": "false", "tensorrt-llm": "false"}],
     "note": "turning prefix caching off"},
    {"members": {"sglang": "--disable-overlap-schedule", "vllm": "--async-scheduling",
                 "tensorrt-llm": "config:disable_overlap_scheduler"},
     "values": [{"sglang": None, "vllm": "false", "tensorrt-llm": "true"}],
     "approximate": True,
     "note": "each overlaps CPU scheduling with GPU work; this turns that off"},
    {"members": {"sglang": "--sampling-backend", "vllm": "env:VLLM_USE_FLASHINFER_SAMPLER"},
     "values": [{"sglang": "pytorch", "vllm": "0"}, {"sglang": "flashinfer", "vllm": "1"}]},
    {"members": {"sglang": "--fp4-gemm-backend", "vllm": "env:VLLM_NVFP4_GEMM_BACKEND"},
     "values": [
         {"sglang": "flashinfer_cudnn", "vllm": "flashinfer-cudnn"},
         {"sglang": "flashinfer_cutlass", "vllm": "flashinfer-cutlass"},
         {"sglang": "flashinfer_trtllm", "vllm": "flashinfer-trtllm"},
     ]},
    {"members": {"sglang": "--enable-dp-attention",
                 "tensorrt-llm": "config:enable_attention_dp"},
     "values": [{"sglang": None, "tensorrt-llm": "true"}]},
    {"members": {"vllm": "--enable-chunked-prefill",
                 "tensorrt-llm": "config:enable_chunked_prefill"},
     "values": [{"vllm": None, "tensorrt-llm": "true"},
                {"vllm": "false", "tensorrt-llm": "false"}]},
]


# ---------------------------------------------------------------------------------------------


def parse_table(text: str) -> dict[str, dict]:
    """Turn a fact table into ``{"--name": spec}`` with ``@flag`` choice references resolved."""
    flags: dict[str, dict] = {}
    refs: dict[str, str] = {}
    lines: list[str] = []
    for raw in text.strip().splitlines():
        if raw.startswith("+ ") and lines:
            lines[-1] += "," + raw[2:].strip()
        elif raw.strip():
            lines.append(raw.strip())
    for lineno, line in enumerate(lines, 1):
        raw = line
        kind, rest = line.split(" ", 1)
        choices = None
        if " : " in rest:
            rest, choice_text = rest.split(" : ", 1)
            choices = choice_text.strip()
        aliases: list[str] = []
        if " = " in rest:
            rest, alias_text = rest.split(" = ", 1)
            for a in alias_text.split(","):
                a = a.strip()
                aliases.append(a if a.startswith("-") else "--" + a)
        name = "--" + rest.strip()
        if kind not in "VBOMQ" or name in flags:
            raise SystemExit(f"table line {lineno}: bad or duplicate entry: {raw!r}")
        spec: dict = {"value": kind in "VMQ"}
        if kind == "M":
            spec["nargs"] = "+"
        if kind == "Q":
            spec["nargs"] = "?"
        if kind == "O":
            spec["negatable"] = True
        if aliases:
            spec["aliases"] = aliases
        if choices:
            if choices.startswith("@"):
                refs[name] = "--" + choices[1:]
            else:
                spec["choices"] = [c.strip() for c in choices.split(",")]
        flags[name] = spec
    for name, target in refs.items():
        flags[name]["choices"] = list(flags[target]["choices"])
    return flags


def _with(flags: dict, docs: dict, notes: dict | None = None) -> dict:
    for name, doc in docs.items():
        if name not in flags:
            raise SystemExit(f"doc for unknown flag {name}")
        flags[name]["doc"] = doc
    for name, note in (notes or {}).items():
        if name not in flags:
            raise SystemExit(f"note for unknown flag {name}")
        flags[name]["deprecated" if note.startswith("deprecated") else "note"] = note
    return flags


def build() -> dict:
    sglang = parse_table(SGLANG_TABLE)
    for name, spec in SGLANG_DEPRECATED.items():
        sglang[name] = dict(spec)
    _with(sglang, SGLANG_DOCS, SGLANG_FLAG_NOTES)
    vllm = _with(parse_table(VLLM_TABLE), VLLM_DOCS, VLLM_FLAG_NOTES)
    trtllm = _with(parse_table(TRTLLM_TABLE), TRTLLM_DOCS)
    sglang_env = {k: {"doc": v} for k, v in SGLANG_ENV.items()}
    for old, new in SGLANG_ENV_RENAMED.items():
        sglang_env[old] = {"renamed_to": new, "doc": f"deprecated name of {new}"}
    for old, flag in SGLANG_ENV_REPLACED_BY_FLAG.items():
        sglang_env[old] = {"replaced_by_flag": flag, "doc": f"deprecated: use {flag}"}
    return {
        "_doc": (
            "deploykb flag registry: per framework, the launch flags (canonical --name; 'value' "
            "says whether it takes a value; 'nargs' '+' for several values, '?' for an optional "
            "one; 'negatable' for --no-name; aliases; documented choices), renamed or deprecated "
            "spellings ('renamed': how deploykb compares them, 'registered': whether the framework "
            "still accepts the old spelling), value aliases, environment variables, TensorRT-LLM "
            "YAML config keys, and cross-framework equivalents. Generated by "
            "scripts/build_flag_registry.py; read by agent/registry.py."
        ),
        "_source": {
            "sglang": SGLANG_SOURCE,
            "vllm": VLLM_SOURCE,
            "tensorrt-llm": TRTLLM_SOURCE,
            "common_env": COMMON_ENV_SOURCE,
        },
        "frameworks": {
            "sglang": {
                "naming": "dash",
                "allow_abbrev": True,
                "flags": sglang,
                "renamed": SGLANG_RENAMED,
                "value_aliases": SGLANG_VALUE_ALIASES,
                "env_prefixes": ["SGLANG_", "SGL_"],
                "env_prefix_aliases": {"SGL_": "SGLANG_"},
                "env": sglang_env,
                "packages": ["sglang", "sglang-router", "sgl-kernel", "sgl-deep-gemm"],
                "images": ["lmsysorg/sglang", "lmsysorg/sglang-rocm"],
            },
            "vllm": {
                "naming": "dash",
                "allow_abbrev": False,
                "flags": vllm,
                "renamed": VLLM_RENAMED,
                "value_aliases": {},
                "env_prefixes": ["VLLM_"],
                "env_prefix_aliases": {},
                "env": {k: {"doc": v} for k, v in VLLM_ENV.items()},
                "packages": ["vllm"],
                "images": ["vllm/vllm-openai"],
            },
            "tensorrt-llm": {
                "naming": "underscore",
                "allow_abbrev": False,
                "flags": trtllm,
                "config": {k: {"doc": v} for k, v in TRTLLM_CONFIG.items()},
                "renamed": {},
                "value_aliases": {},
                "env_prefixes": ["TRTLLM_", "TLLM_"],
                "env_prefix_aliases": {},
                "env": {},
                "packages": ["tensorrt-llm", "tensorrt_llm"],
                "images": ["nvcr.io/nvidia/tensorrt-llm/release"],
            },
        },
        "common_env": {k: {"doc": v} for k, v in COMMON_ENV.items()},
        "equivalents": EQUIVALENTS,
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if data/flags.json is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is stale: run scripts/build_flag_registry.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text.encode()) // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
