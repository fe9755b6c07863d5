// from: clr@rocm-6.2.2:rocclr/device/device.cpp (lines 95, 102, 111-112, 114, 224-226: the supportedIsas_ table's declaration, column header and rows)
  // ruleid: clr-supported-isas gfx950=blocked
  static constexpr Isa supportedIsas_[] = {
  // Use the Target ID syntax. This comprises the processor name, followed by
  // -------------- Compiler ----------    - Runtime -    ---- IP ----   -- Target -- ---------- Target Properties ----------
  //                                        Supported        Version       Features
  // Target ID                 HSAIL ID     ROC    PAL      Maj/Min/Stp   SRAMECC XNACK CU    Width Width Width   Size    Banks
    // ruleid: clr-supported-isas gfx1200=allowed
    {"gfx1200",                "gfx1200",   true,  true,    12, 0,  0,    NONE,   NONE, 2,    32,   1,    256,    64 * Ki, 32},
    // ruleid: clr-supported-isas gfx1201=allowed
    {"gfx1201",                "gfx1201",   true,  true,    12, 0,  1,    NONE,   NONE, 2,    32,   1,    256,    64 * Ki, 32},
  };
