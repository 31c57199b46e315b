// RAII around one API call: correlation id plus CUPTI enter/exit callbacks.
#pragma once

#include "engine.h"

namespace simgpu {

class ApiScope {
 public:
  ApiScope(Engine* e, uint32_t domain, uint32_t cbid, const char* name,
           const void* params = nullptr)
      : engine_(e) {
    if (engine_) engine_->ApiEnter(&frame_, domain, cbid, name, params);
  }
  ~ApiScope() {
    if (engine_) engine_->ApiExit(&frame_, ret_);
  }
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;
  template <typename T>
  T Ret(T r) {
    ret_ = static_cast<int32_t>(r);
    return r;
  }
  uint32_t correlation() const { return frame_.correlation; }

 private:
  Engine* engine_;
  ApiFrame frame_;
  int32_t ret_ = 0;
};

}  // namespace simgpu
