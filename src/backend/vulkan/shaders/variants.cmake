# Shader variants compiled by cmake/vulkan.cmake: "NAME SOURCE [DEFINE...]".
# NAME becomes VKS_<NAME> in the generated vk_shaders.h.
set(_types "f32:0" "f16:1" "bf16:30" "q4_0:2" "q4_1:3" "q5_0:6" "q5_1:7" "q8_0:8"
           "q2_k:10" "q3_k:11" "q4_k:12" "q5_k:13" "q6_k:14" "mxfp4:39")
set(LOOM_VK_VARIANTS "")
foreach(tv ${_types})
  string(REPLACE ":" ";" tv2 ${tv})
  list(GET tv2 0 tn)
  list(GET tv2 1 tid)
  list(APPEND LOOM_VK_VARIANTS "mmv_${tn} mul_mat_vec.comp TYPE=${tid}")
  list(APPEND LOOM_VK_VARIANTS "mm_${tn} mul_mat.comp TYPE=${tid}")
  list(APPEND LOOM_VK_VARIANTS "get_rows_${tn} get_rows.comp TYPE=${tid}")
  list(APPEND LOOM_VK_VARIANTS "mmid_${tn} mul_mat_id.comp TYPE=${tid}")
  if(NOT tid EQUAL 0 AND NOT tid EQUAL 1 AND NOT tid EQUAL 30)
    list(APPEND LOOM_VK_VARIANTS "mmvq_${tn} mul_mat_vec_q8.comp TYPE=${tid} DOT4=0")
    list(APPEND LOOM_VK_VARIANTS "mmq_${tn} mul_mat_q8.comp TYPE=${tid} DOT4=0")
    # the same with OpSDot (devices with shaderIntegerDotProduct)
    list(APPEND LOOM_VK_VARIANTS "mmvqd_${tn} mul_mat_vec_q8.comp TYPE=${tid} DOT4=1")
    list(APPEND LOOM_VK_VARIANTS "mmqd_${tn} mul_mat_q8.comp TYPE=${tid} DOT4=1")
  endif()
endforeach()
list(APPEND LOOM_VK_VARIANTS
  "get_rows_i32 get_rows.comp TYPE=26"
  "binary binary.comp"
  "unary unary.comp"
  "cpy cpy.comp"
  "cpy_q8_0 cpy_q.comp DTYPE=8"
  "cpy_q4_0 cpy_q.comp DTYPE=2"
  "copy_bytes copy_bytes.comp"
  "norm norm.comp"
  "sum_rows sum_rows.comp"
  "hadamard hadamard.comp"
  "softmax softmax.comp"
  "rope rope.comp"
  "quantize_q8 quantize_q8.comp"
  "fa_f32 flash_attn.comp KVT=0"
  "fa_f16 flash_attn.comp KVT=1"
  "fa_bf16 flash_attn.comp KVT=30"
  "fa_q8_0 flash_attn.comp KVT=8"
  "fa_q4_0 flash_attn.comp KVT=2"
  "fa_combine fa_combine.comp")
