// from: clr@rocm-6.0.0:rocclr/device/device.cpp (lines 95, 102, 111-112, 114, 130, 202, 208, 211, 224: the supportedIsas_ table's declaration, column header and rows)
  // ruleid: clr-supported-isas gfx1200=blocked gfx1201=blocked gfx950=blocked
  static constexpr Isa supportedIsas_[] = {
  // Use the Target ID syntax. This comprises the processor name, followed by
  // -------------- Compiler ----------    - Runtime -    ---- IP ----   -- Target -- ---------- Target Properties ----------
  //                                        Supported        Version       Features
  // Target ID                 HSAIL ID     ROC    PAL      Maj/Min/Stp   SRAMECC XNACK CU    Width Width Width   Size    Banks
    // ruleid: clr-supported-isas gfx900=allowed
    {"gfx900",                 "gfx901",    true,  true,    9,  0,  0,    NONE,   ANY,  4,    16,   1,    256,    64 * Ki, 32}, // Also Greenland
    // ruleid: clr-supported-isas gfx1011=allowed
    {"gfx1011",                "gfx1011",   true,  true,    10, 1,  1,    NONE,   ANY,  2,    32,   1,    256,    64 * Ki, 32},
    // ruleid: clr-supported-isas gfx1013=allowed
    {"gfx1013",                "gfx1013",   true,  false,   10, 1,  3,    NONE,   ANY,  2,    32,   1,    256,    64 * Ki, 32},
    // ruleid: clr-supported-isas gfx1030=allowed
    {"gfx1030",                "gfx1030",   true,  true,    10, 3,  0,    NONE,   NONE, 2,    32,   1,    256,    64 * Ki, 32},
  };
