; Haskell definitions for the chunker (capture conventions: chunk/mod.rs).
; A type signature joins the definition below it (as an attribute); the
; equations of one function are merged into one chunk by the extractor.

(data_type name: (name) @name) @definition.struct
(newtype name: (name) @name) @definition.struct
(type_synonym name: (name) @name) @definition.type
(type_family name: (name) @name) @definition.type
(class name: (name) @name) @definition.trait
(instance name: (name) @name) @definition.impl
(declarations (function name: (variable) @name) @definition.function)
(declarations (bind name: (variable) @name) @definition.function)
(class_declarations (signature name: (variable) @name) @definition.function)
(instance_declarations (function name: (variable) @name) @definition.function)
(instance_declarations (bind name: (variable) @name) @definition.function)

(declarations (signature) @attribute)
(comment) @comment
(haddock) @comment
