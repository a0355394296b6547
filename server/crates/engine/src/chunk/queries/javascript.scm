; JavaScript-only definitions, appended to ecmascript.scm (capture
; conventions: chunk/mod.rs).

; Class fields holding functions: `handleClick = () => {}`.
(field_definition
  property: (_) @name
  value: [(arrow_function) (function_expression)]) @definition.method
