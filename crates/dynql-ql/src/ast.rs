//! The syntax tree of a YT QL query, exactly as written (no names resolved, no types).

use crate::error::Span;

/// A literal as written. Unsuffixed integers keep their 64 bits: a value above `i64::MAX` is
/// the int64 with the same bits (YT reads digits as unsigned and reinterprets).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Int(i64),
    Uint(u64),
    Double(f64),
    Boolean(bool),
    String(Vec<u8>),
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Plus,
    Minus,
    BitNot,
    Not,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    NotEq,
    Less,
    LessOrEq,
    Greater,
    GreaterOrEq,
    BitOr,
    BitAnd,
    LeftShift,
    RightShift,
    Plus,
    Minus,
    Concat,
    Multiply,
    Divide,
    Modulo,
}

impl BinaryOp {
    /// The comparison with its operands swapped (`a < b` is `b > a`); any other operator
    /// unchanged.
    ///
    /// ```
    /// use dynql_ql::ast::BinaryOp;
    /// assert_eq!(BinaryOp::LessOrEq.mirrored(), BinaryOp::GreaterOrEq);
    /// assert_eq!(BinaryOp::Eq.mirrored(), BinaryOp::Eq);
    /// ```
    pub fn mirrored(self) -> BinaryOp {
        match self {
            BinaryOp::Less => BinaryOp::Greater,
            BinaryOp::LessOrEq => BinaryOp::GreaterOrEq,
            BinaryOp::Greater => BinaryOp::Less,
            BinaryOp::GreaterOrEq => BinaryOp::LessOrEq,
            other => other,
        }
    }

    /// The operator as YT prints it in derived column names.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "OR",
            BinaryOp::And => "AND",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "!=",
            BinaryOp::Less => "<",
            BinaryOp::LessOrEq => "<=",
            BinaryOp::Greater => ">",
            BinaryOp::GreaterOrEq => ">=",
            BinaryOp::BitOr => "|",
            BinaryOp::BitAnd => "&",
            BinaryOp::LeftShift => "<<",
            BinaryOp::RightShift => ">>",
            BinaryOp::Plus => "+",
            BinaryOp::Minus => "-",
            BinaryOp::Concat => "||",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
        }
    }

    /// True for `= != < <= > >=`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Less
                | BinaryOp::LessOrEq
                | BinaryOp::Greater
                | BinaryOp::GreaterOrEq
        )
    }
}

/// The pattern-matching operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeKind {
    Like,
    Ilike,
    Rlike,
}

/// An expression with its span in the query text.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// Direct sub-expressions (IN/BETWEEN/TRANSFORM literal lists excluded: they are data).
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Column { .. } => vec![],
            ExprKind::Call { args, .. } => args.iter().collect(),
            ExprKind::Unary { operand, .. } | ExprKind::IsNull { operand, .. } => vec![operand],
            ExprKind::Binary { left, right, .. } => vec![left, right],
            ExprKind::Tuple(items) => items.iter().collect(),
            ExprKind::In { operand, .. } | ExprKind::Between { operand, .. } => vec![operand],
            ExprKind::Like {
                operand,
                pattern,
                escape,
                ..
            } => {
                let mut v: Vec<&Expr> = vec![operand, pattern];
                v.extend(escape.as_deref());
                v
            }
            ExprKind::Case {
                operand,
                whens,
                otherwise,
            } => {
                let mut v: Vec<&Expr> = operand.as_deref().into_iter().collect();
                for (w, t) in whens {
                    v.push(w);
                    v.push(t);
                }
                v.extend(otherwise.as_deref());
                v
            }
            ExprKind::Transform {
                operand, default, ..
            } => {
                let mut v: Vec<&Expr> = vec![operand];
                v.extend(default.as_deref());
                v
            }
            ExprKind::Alias { expr, .. } => vec![expr],
        }
    }
}

/// Expression forms.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    /// `name`, `table.name`, `[odd name]`.
    Column {
        table: Option<String>,
        name: String,
    },
    /// A function call; `name` as written (lookup is case-insensitive).
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `(e1, e2, ...)` with two or more items.
    Tuple(Vec<Expr>),
    /// `x [NOT] IN (items)`; items are literals or literal tuples.
    In {
        operand: Box<Expr>,
        items: Vec<Expr>,
        negated: bool,
    },
    /// `x BETWEEN lo AND hi` or the multi-range form; bounds are literals or literal tuples.
    Between {
        operand: Box<Expr>,
        ranges: Vec<(Expr, Expr)>,
    },
    /// `x [NOT] LIKE|ILIKE|RLIKE p [ESCAPE e]`.
    Like {
        operand: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        kind: LikeKind,
        negated: bool,
    },
    /// `x IS [NOT] NULL`.
    IsNull {
        operand: Box<Expr>,
        negated: bool,
    },
    /// `CASE [x] WHEN .. THEN .. [ELSE ..] END`.
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// `TRANSFORM(x, (from...), (to...) [, default])`.
    Transform {
        operand: Box<Expr>,
        from: Vec<Expr>,
        to: Vec<Expr>,
        default: Option<Box<Expr>>,
    },
    /// `expr AS name` (allowed at any nesting level).
    Alias {
        expr: Box<Expr>,
        name: String,
    },
}

/// The referenced table of a FROM or JOIN.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRef {
    pub path: String,
    pub alias: Option<String>,
    pub span: Span,
}

/// How a join matches rows.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinCondition {
    /// `USING c1, c2`.
    Using(Vec<(String, Span)>),
    /// `ON lhs = rhs` (scalars or equal-length tuples).
    On { left: Vec<Expr>, right: Vec<Expr> },
}

/// One `[LEFT] JOIN`.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    pub left: bool,
    pub table: TableRef,
    pub condition: JoinCondition,
    /// The `AND pred` filter on the foreign table.
    pub predicate: Option<Expr>,
    pub span: Span,
}

/// Where the HAVING filter stands relative to WITH TOTALS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotalsMode {
    /// No WITH TOTALS.
    None,
    /// `WITH TOTALS [HAVING ..]`: totals cover all groups (before HAVING).
    BeforeHaving,
    /// `HAVING .. WITH TOTALS`: totals cover the groups that pass HAVING.
    AfterHaving,
}

/// `GROUP BY` with its tail.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupBy {
    pub items: Vec<Projection>,
    pub having: Option<Expr>,
    pub totals: TotalsMode,
}

/// A select-list or group item.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub expr: Expr,
    pub alias: Option<String>,
}

/// An ORDER BY item.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    pub expr: Expr,
    pub descending: bool,
}

/// A whole query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// `None` for `*`.
    pub projections: Option<Vec<Projection>>,
    pub from: TableRef,
    pub joins: Vec<Join>,
    pub where_clause: Option<Expr>,
    pub group_by: Option<GroupBy>,
    /// A HAVING without GROUP BY, kept to report YT's error.
    pub having_without_group: Option<Span>,
    pub order_by: Vec<OrderItem>,
    pub offset: Option<(i64, Span)>,
    pub limit: Option<(i64, Span)>,
}

/// Prints a literal canonically, as YT does in derived column names.
pub fn format_literal(l: &Literal) -> String {
    match l {
        Literal::Null => "null".into(),
        Literal::Int(v) => v.to_string(),
        Literal::Uint(v) => format!("{v}u"),
        Literal::Double(v) => format_double(*v),
        Literal::Boolean(v) => v.to_string(),
        Literal::String(s) => format!("\"{}\"", escape_bytes(s)),
    }
}

fn format_double(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{v}");
    if s.contains('.') || s.contains('e') || s.contains("NaN") {
        s
    } else {
        format!("{s}.")
    }
}

/// C-style escaping of a byte string for display inside double quotes.
pub fn escape_bytes(s: &[u8]) -> String {
    let mut out = String::new();
    for &b in s {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The name YT gives an unaliased projection (§4.7): a top-level column is its bare name,
/// anything else is the canonical re-print of the expression.
pub fn derived_name(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Column {
            table: Some(t),
            name,
        } => format!("{t}.{name}"),
        ExprKind::Column { table: None, name } => name.clone(),
        _ => format_expr(e),
    }
}

/// Canonical re-print of an expression: `(lhs)op(rhs)`, `f(a, b)`, `-(x)`, odd column names
/// in brackets.
pub fn format_expr(e: &Expr) -> String {
    let list = |items: &[Expr]| items.iter().map(format_expr).collect::<Vec<_>>().join(", ");
    match &e.kind {
        ExprKind::Literal(l) => format_literal(l),
        ExprKind::Column { table, name } => {
            let n = if is_plain_identifier(name) {
                name.clone()
            } else {
                format!("[{name}]")
            };
            match table {
                Some(t) => format!("{t}.{n}"),
                None => n,
            }
        }
        ExprKind::Call { name, args } => format!("{name}({})", list(args)),
        ExprKind::Unary { op, operand } => {
            let sym = match op {
                UnaryOp::Plus => "+",
                UnaryOp::Minus => "-",
                UnaryOp::BitNot => "~",
                UnaryOp::Not => "NOT",
            };
            format!("{sym}({})", format_expr(operand))
        }
        ExprKind::Binary { op, left, right } => {
            format!(
                "({}){}({})",
                format_expr(left),
                op.symbol(),
                format_expr(right)
            )
        }
        ExprKind::Tuple(items) => format!("({})", list(items)),
        ExprKind::In {
            operand,
            items,
            negated,
        } => {
            let s = format!("({}) IN ({})", format_expr(operand), list(items));
            if *negated {
                format!("NOT({s})")
            } else {
                s
            }
        }
        ExprKind::Between { operand, ranges } => {
            let r = ranges
                .iter()
                .map(|(lo, hi)| format!("{} AND {}", format_expr(lo), format_expr(hi)))
                .collect::<Vec<_>>()
                .join(", ");
            format!("({}) BETWEEN ({r})", format_expr(operand))
        }
        ExprKind::Like {
            operand,
            pattern,
            escape,
            kind,
            negated,
        } => {
            let k = match kind {
                LikeKind::Like => "LIKE",
                LikeKind::Ilike => "ILIKE",
                LikeKind::Rlike => "RLIKE",
            };
            let mut s = format!(
                "({}) {}{k} ({})",
                format_expr(operand),
                if *negated { "NOT " } else { "" },
                format_expr(pattern)
            );
            if let Some(esc) = escape {
                s.push_str(&format!(" ESCAPE ({})", format_expr(esc)));
            }
            s
        }
        ExprKind::IsNull { operand, negated } => {
            let s = format!("is_null({})", format_expr(operand));
            if *negated {
                format!("NOT({s})")
            } else {
                s
            }
        }
        ExprKind::Case {
            operand,
            whens,
            otherwise,
        } => {
            let mut s = "CASE".to_string();
            if let Some(o) = operand {
                s.push_str(&format!(" {}", format_expr(o)));
            }
            for (w, t) in whens {
                s.push_str(&format!(" WHEN {} THEN {}", format_expr(w), format_expr(t)));
            }
            if let Some(o) = otherwise {
                s.push_str(&format!(" ELSE {}", format_expr(o)));
            }
            s.push_str(" END");
            s
        }
        ExprKind::Transform {
            operand,
            from,
            to,
            default,
        } => {
            let mut s = format!(
                "TRANSFORM({}, ({}), ({})",
                format_expr(operand),
                list(from),
                list(to)
            );
            if let Some(d) = default {
                s.push_str(&format!(", {}", format_expr(d)));
            }
            s.push(')');
            s
        }
        ExprKind::Alias { name, .. } => name.clone(),
    }
}
