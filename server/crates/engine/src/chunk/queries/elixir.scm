; Elixir definitions for the chunker (capture conventions: chunk/mod.rs).
; Everything is a call: `defmodule Name do ... end`, `def name(args)`.
; Module names are written paths (`Quarry.SessionStore`); functions are
; qualified by their module (`Quarry.SessionStore.put_session`).

((call target: (identifier) @_kw (arguments (alias) @name.path)) @definition.module
  (#eq? @_kw "defmodule"))
((call target: (identifier) @_kw (arguments (alias) @name.path)) @definition.interface
  (#eq? @_kw "defprotocol"))
((call target: (identifier) @_kw (arguments (alias) @name.path)) @definition.impl
  (#eq? @_kw "defimpl"))
((call target: (identifier) @_kw (arguments [
    (call target: (identifier) @name)
    (identifier) @name
    (binary_operator left: (call target: (identifier) @name))
    (binary_operator left: (identifier) @name)
  ])) @definition.function
  (#any-of? @_kw "def" "defp" "defdelegate" "defguard" "defguardp" "defn" "defnp"))
((call target: (identifier) @_kw (arguments [
    (call target: (identifier) @name)
    (identifier) @name
    (binary_operator left: (call target: (identifier) @name))
  ])) @definition.macro
  (#any-of? @_kw "defmacro" "defmacrop"))


; `@doc`, `@moduledoc` and `@spec` document the definition below them;
; other module attributes are constants.
((unary_operator operator: "@" operand: (call target: (identifier) @_attr)) @comment
  (#any-of? @_attr "doc" "moduledoc" "typedoc"))
((unary_operator operator: "@" operand: (call target: (identifier) @_attr)) @attribute
  (#any-of? @_attr "spec" "impl" "since" "deprecated"))
((unary_operator operator: "@" operand: (call target: (identifier) @name)) @definition.constant
  (#not-any-of? @name "doc" "moduledoc" "typedoc" "spec" "impl" "since" "deprecated"
    "behaviour" "callback" "derive" "type" "typep" "opaque" "dialyzer" "compile"))

(comment) @comment
