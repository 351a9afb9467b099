// Tpc.g4 — the grammar of the .tpc target-platform language (see docs/language.md).
//
// Words such as `platform` or `opset` are keywords only where the grammar expects one:
// every rule that takes a name accepts them through `name`. Always reserved: true false
// none inf and or not with. The parse tree is turned into the AST by frontend/; nothing
// outside frontend/*.cpp sees ANTLR types.
grammar Tpc;

file : (importDecl | topDecl)* EOF ;

importDecl : IMPORT STRING ;

topDecl : platformDecl | frameworkDecl | capabilitiesDecl | recipeDecl ;

// ---- platform -----------------------------------------------------------------------

platformDecl : PLATFORM name (EXTENDS name)? LBRACE platformItem* RBRACE ;

platformItem
  : VERSION versionValue                                         # versionItem
  | TYPE STRING                                                  # typeItem
  | SIMD_PADDING boolValue                                       # simdPaddingItem
  | METADATA boolValue                                           # metadataItem
  | INSERT_PRESERVING_QUANTIZERS boolValue                       # preservingQuantizersItem
  | OVERRIDE? ATTR name ASSIGN valueExpr                         # attrItem
  | OVERRIDE? CONFIG name ASSIGN valueExpr                       # configItem
  | OVERRIDE? OPTIONS name ASSIGN optionsExpr                    # optionsItem
  | OVERRIDE? DEFAULT optionsExpr                                # defaultItem
  | OVERRIDE? OPSET name (COMMA name)* (COLON optionsExpr)?      # opsetItem
  | OVERRIDE? GROUP name ASSIGN setExpr (BAR setExpr)*           # groupItem
  | REMOVE? FUSE fuseElem (ARROW fuseElem)* (WITH valueExpr)? (AS name)?  # fuseItem
  | RESOURCES block                                              # resourcesItem
  | RECIPE name                                                  # recipeItem
  ;

versionValue : FLOAT | INT ;
boolValue : TRUE | FALSE ;

// `NAME`, `NAME with {...} with {...}`, or `{...}`
valueExpr : name (WITH block)* | block ;

// an options name (maybe `with {...}`: every candidate edited), or
// `[c1, c2] base c1`; `A + B` concatenates (the base is A's)
optionsExpr : optionsTerm (PLUS optionsTerm)* ;
optionsTerm
  : name (WITH block)*                                           # namedOptions
  | LBRACK optionElem (COMMA optionElem)* COMMA? RBRACK (BASE name)? # listOptions
  ;
optionElem : name (WITH block)* | block ;

// an opset or group name, or an inline `(A | B)`
setExpr : name | LPAREN setExpr (BAR setExpr)* COMMA? RPAREN ;
fuseElem : setExpr ;

// ---- field blocks -------------------------------------------------------------------

block : LBRACE (field COMMA?)* RBRACE ;
field : key COLON value ;
key : name (DOT name)* ;
// A quantity is a number with a unit: `41 KiB`, `2.5 MB`, `1.2 G`, `75%` (only in
// field values: budgets and memory; the passes read the unit).
value
  : (INT | FLOAT) (PERCENT | name)                               # quantityValue
  | literal                                                      # literalValue
  | name (WITH block)*                                           # nameValue
  | block                                                        # blockValue
  | LBRACK (value (COMMA value)* COMMA?)? RBRACK                  # listValue
  ;

literal : INT | FLOAT | POW2 | STRING | TRUE | FALSE | NONE | INF | NEG_INF ;

// ---- framework ----------------------------------------------------------------------

frameworkDecl : FRAMEWORK name LBRACE frameworkItem* RBRACE ;

frameworkItem
  : WEIGHT name COLON slotBinding (COMMA slotBinding)*           # weightItem
  | ACTIVATION name (COMMA name)*                                # activationItem
  | NO_QUANTIZE name (COMMA name)*                               # noQuantizeItem
  | RANGE name LBRACK literal COMMA literal RBRACK                # rangeItem
  | COMPOSITE name LPAREN name (COMMA name)* RPAREN ASSIGN pattern (IS name)? # compositeItem
  ;

// A composite operator's dataflow: `Mul(x, Sigmoid(x))`. An argument is an op
// applied to arguments, a parameter, or a number (a constant input matched by value).
pattern : name LPAREN patternArg (COMMA patternArg)* RPAREN (WHERE pred)? ;
patternArg : pattern | name | INT | FLOAT ;

slotBinding : name DOT INPUT LBRACK INT RBRACK (WHERE pred)? axesSpec? ;
axesSpec : AXES LPAREN axisArg (COMMA axisArg)* COMMA? RPAREN ;
axisArg : name COLON INT ;

// ---- capabilities -------------------------------------------------------------------

// `extends PARENT` inherits the parent's bindings; the block is then optional.
capabilitiesDecl
  : CAPABILITIES name ASSIGN name ON name
    (EXTENDS name (LBRACE binding* RBRACE)? | LBRACE binding* RBRACE) ;
// `OPSET <- none`: no framework op realises the opset (said on purpose; no Rule 14 warning).
// `none` among ops parses, so that the checker says what is wrong once.
// `override OPSET <- ...` (with `extends`) replaces the parent's bindings of OPSET.
binding : OVERRIDE? name BIND bindItem (COMMA bindItem)* ;
bindItem : NONE | opRef ;
opRef : name (WHERE pred)? ;

// ---- recipe -------------------------------------------------------------------------

recipeDecl : RECIPE name (EXTENDS name)? block ;

// ---- filter predicates --------------------------------------------------------------
// Chains are flat lists so that long `and`/`or` chains do not nest the tree.

pred : andPred (OR andPred)* ;
andPred : notPred (AND notPred)* ;
notPred : NOT* atomPred ;
atomPred
  : LPAREN pred RPAREN                                           # parenPred
  | CONST LPAREN INPUT LBRACK INT RBRACK RPAREN                   # constPred
  | HAS LPAREN name RPAREN                                       # hasPred
  | operand (cmpOp operand)+                                     # cmpPred
  | operand IN LBRACK (literal (COMMA literal)* COMMA?)? RBRACK   # inPred
  ;
cmpOp : EQ | NE | LT | LE | GT | GE ;
operand
  : INPUT LBRACK INT RBRACK                                       # inputOperand
  | RANK LPAREN INPUT LBRACK INT RBRACK RPAREN                    # rankOperand
  | SHAPE LPAREN INPUT LBRACK INT RBRACK RPAREN LBRACK INT RBRACK # shapeOperand
  | literal                                                      # literalOperand
  | LBRACK (literal (COMMA literal)* COMMA?)? RBRACK              # listOperand
  | name                                                         # attrOperand
  ;

// Every contextual keyword is also a name.
name
  : IDENT | IMPORT | PLATFORM | EXTENDS | FRAMEWORK | CAPABILITIES | RECIPE | VERSION | TYPE
  | SIMD_PADDING | METADATA | INSERT_PRESERVING_QUANTIZERS | ATTR | CONFIG | OPTIONS | DEFAULT | OPSET | GROUP | FUSE | AS
  | OVERRIDE | REMOVE | BASE | ON | IN | WEIGHT | ACTIVATION | NO_QUANTIZE | RANGE | WHERE
  | AXES | INPUT | RANK | SHAPE | CONST | HAS | COMPOSITE | RESOURCES | IS
  ;

// ---- lexer --------------------------------------------------------------------------

// always reserved
TRUE : 'true' ;
FALSE : 'false' ;
NONE : 'none' ;
INF : 'inf' ;
NEG_INF : '-inf' ;
AND : 'and' ;
OR : 'or' ;
NOT : 'not' ;
WITH : 'with' ;

// contextual keywords (frontend/Parser.cpp treats IMPORT..RESOURCES as names: keep this order)
IMPORT : 'import' ;
PLATFORM : 'platform' ;
EXTENDS : 'extends' ;
FRAMEWORK : 'framework' ;
CAPABILITIES : 'capabilities' ;
RECIPE : 'recipe' ;
VERSION : 'version' ;
TYPE : 'type' ;
SIMD_PADDING : 'simd_padding' ;
METADATA : 'metadata' ;
INSERT_PRESERVING_QUANTIZERS : 'insert_preserving_quantizers' ;
ATTR : 'attr' ;
CONFIG : 'config' ;
OPTIONS : 'options' ;
DEFAULT : 'default' ;
OPSET : 'opset' ;
GROUP : 'group' ;
FUSE : 'fuse' ;
AS : 'as' ;
OVERRIDE : 'override' ;
REMOVE : 'remove' ;
BASE : 'base' ;
ON : 'on' ;
IN : 'in' ;
WEIGHT : 'weight' ;
ACTIVATION : 'activation' ;
NO_QUANTIZE : 'no_quantize' ;
RANGE : 'range' ;
WHERE : 'where' ;
AXES : 'axes' ;
INPUT : 'input' ;
RANK : 'rank' ;
SHAPE : 'shape' ;
CONST : 'const' ;
HAS : 'has' ;
COMPOSITE : 'composite' ;
RESOURCES : 'resources' ;
IS : 'is' ;

ARROW : '->' ;
BIND : '<-' ;
EQ : '==' ;
NE : '!=' ;
LE : '<=' ;
GE : '>=' ;
LT : '<' ;
GT : '>' ;
ASSIGN : '=' ;
LBRACE : '{' ;
RBRACE : '}' ;
LBRACK : '[' ;
RBRACK : ']' ;
LPAREN : '(' ;
RPAREN : ')' ;
COMMA : ',' ;
COLON : ':' ;
DOT : '.' ;
PERCENT : '%' ;
BAR : '|' ;
PLUS : '+' ;

// `2^-16`; the frontend rejects any base other than 2
POW2 : DIGITS '^' '-'? DIGITS ;
FLOAT : '-'? DIGITS '.' DIGITS EXPONENT? | '-'? DIGITS EXPONENT ;
INT : '-'? DIGITS ;
fragment DIGITS : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

IDENT : [A-Za-z_] [A-Za-z0-9_]* ;

STRING : '"' (~["\\\r\n] | '\\' ["\\])* '"' ;
// Error tokens: reported by the frontend with a precise location.
BAD_ESCAPE_STRING : '"' (~["\\\r\n] | '\\' .)* '"' ;
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* ;
UNTERMINATED_COMMENT : '/*' (~[*] | '*'+ ~[*/])* '*'* EOF ;

LINE_COMMENT : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
WS : [ \t\r\n\f]+ -> skip ;

BAD_CHAR : . ;
