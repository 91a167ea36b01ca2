//! The YT QL parser: a recursive-descent parser over [`lexer`](crate::lexer) tokens that
//! follows YT's grammar and operator precedence (reference §2–§3).
//!
//! YT QL is not SQL: `[..]` quotes paths, `OFFSET` must precede `LIMIT`, `BETWEEN` has a
//! multi-range form, there are no comments and no `;`. A hand-written parser states that
//! grammar directly and reports every error with its byte position.

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::lexer::{Keyword, Spanned, Token};

/// The largest LIMIT YT accepts.
pub const MAX_LIMIT: i64 = i64::MAX - 2;

/// Parses a whole query from (placeholder-expanded) tokens.
pub fn parse_query(tokens: &[Spanned]) -> Result<Query> {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let q = p.query()?;
    p.expect_eof()?;
    Ok(q)
}

/// Parses a standalone expression (computed column definitions).
pub fn parse_expression(tokens: &[Spanned]) -> Result<Expr> {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let e = p.expr()?;
    p.expect_eof()?;
    Ok(e)
}

struct Parser<'a> {
    tokens: &'a [Spanned],
    pos: usize,
    /// Current recursion depth, capped so that hostile input cannot overflow the stack.
    depth: usize,
}

/// The deepest nesting of parentheses and prefix operators the parser accepts.
pub const MAX_PARSE_DEPTH: usize = 64;

/// The longest chain of one binary operator (`a + b + ...`); each link deepens the tree.
pub const MAX_CHAIN: usize = 1000;

fn describe(t: &Token) -> String {
    match t {
        Token::Keyword(k) => format!("keyword {}", format!("{k:?}").to_uppercase()),
        Token::Ident(s) => format!("identifier {s:?}"),
        Token::QuotedIdent(s) => format!("quoted identifier [{s}]"),
        Token::Str(_) => "string literal".into(),
        Token::Int(v) => format!("integer {v}"),
        Token::Uint(v) => format!("integer {v}u"),
        Token::Double(v) => format!("number {v}"),
        Token::Placeholder(n) => format!("placeholder {{{n}}}"),
        Token::Punct(p) => format!("{p:?}"),
        Token::Eof => "end of query".into(),
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &'a Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].token
    }

    fn peek_at(&self, ahead: usize) -> &'a Token {
        &self.tokens[(self.pos + ahead).min(self.tokens.len() - 1)].token
    }

    fn span(&self) -> Span {
        self.tokens[self.pos.min(self.tokens.len() - 1)].span
    }

    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }

    fn advance(&mut self) -> &'a Spanned {
        let t = &self.tokens[self.pos.min(self.tokens.len() - 1)];
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn error<T>(&self, what: &str) -> Result<T> {
        Err(Error::grammar(
            format_args!("unexpected {}, expected {what}", describe(self.peek())),
            self.span(),
        ))
    }

    fn is_kw(&self, k: Keyword) -> bool {
        *self.peek() == Token::Keyword(k)
    }

    fn eat_kw(&mut self, k: Keyword) -> bool {
        if self.is_kw(k) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, k: Keyword, what: &str) -> Result<()> {
        if self.eat_kw(k) {
            Ok(())
        } else {
            self.error(what)
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Token::Punct(q) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, p: &str) -> Result<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            self.error(&format!("{p:?}"))
        }
    }

    fn expect_eof(&mut self) -> Result<()> {
        if *self.peek() == Token::Eof {
            Ok(())
        } else {
            self.error("end of query")
        }
    }

    fn identifier(&mut self, what: &str) -> Result<(String, Span)> {
        match self.peek() {
            Token::Ident(s) | Token::QuotedIdent(s) => {
                let span = self.advance().span;
                Ok((s.clone(), span))
            }
            _ => self.error(what),
        }
    }

    // ---------------------------------------------------------------- query structure

    fn query(&mut self) -> Result<Query> {
        self.eat_kw(Keyword::Select);
        let projections = if self.eat_punct("*") {
            None
        } else {
            let mut items = vec![self.projection()?];
            while self.eat_punct(",") {
                items.push(self.projection()?);
            }
            Some(items)
        };
        self.expect_kw(Keyword::From, "FROM")?;
        let from = self.table_ref()?;
        if self.is_kw(Keyword::WithIndex) {
            return Err(Error::syntax(
                "WITH INDEX (secondary indices) is not supported",
                self.span(),
            ));
        }
        let mut joins = Vec::new();
        loop {
            let start = self.span();
            let left = self.is_kw(Keyword::Left);
            if left
                && !matches!(
                    self.peek_at(1),
                    Token::Keyword(Keyword::Join | Keyword::Array)
                )
            {
                break;
            }
            if left {
                self.advance();
            }
            if self.is_kw(Keyword::Array) {
                return Err(Error::syntax(
                    "ARRAY JOIN needs list (composite) columns, which are not supported yet",
                    self.span(),
                ));
            }
            if !self.eat_kw(Keyword::Join) {
                if left {
                    return self.error("JOIN");
                }
                break;
            }
            let table = self.table_ref()?;
            let condition = if self.eat_kw(Keyword::Using) {
                let mut cols = vec![self.qualified_name()?];
                while self.eat_punct(",") {
                    cols.push(self.qualified_name()?);
                }
                JoinCondition::Using(cols)
            } else if self.eat_kw(Keyword::On) {
                let l = self.bit_or()?;
                self.expect_punct("=")?;
                let r = self.bit_or()?;
                let unpack = |e: Expr| match e.kind {
                    ExprKind::Tuple(items) => items,
                    _ => vec![e],
                };
                JoinCondition::On {
                    left: unpack(l),
                    right: unpack(r),
                }
            } else {
                return self.error("USING or ON");
            };
            let predicate = if self.eat_kw(Keyword::And) {
                Some(self.and_expr()?)
            } else {
                None
            };
            joins.push(Join {
                left,
                table,
                condition,
                predicate,
                span: start.to(self.prev_span()),
            });
        }
        let where_clause = if self.eat_kw(Keyword::Where) {
            Some(self.expr()?)
        } else {
            None
        };
        let mut group_by = None;
        let mut having_without_group = None;
        if self.eat_kw(Keyword::GroupBy) {
            let mut items = vec![self.projection()?];
            while self.eat_punct(",") {
                items.push(self.projection()?);
            }
            let mut having = None;
            let mut totals = TotalsMode::None;
            if self.eat_kw(Keyword::WithTotals) {
                totals = TotalsMode::BeforeHaving;
                if self.eat_kw(Keyword::Having) {
                    having = Some(self.expr()?);
                }
            } else if self.eat_kw(Keyword::Having) {
                having = Some(self.expr()?);
                if self.eat_kw(Keyword::WithTotals) {
                    totals = TotalsMode::AfterHaving;
                }
            }
            group_by = Some(GroupBy {
                items,
                having,
                totals,
            });
        } else if self.is_kw(Keyword::Having) {
            having_without_group = Some(self.span());
            self.advance();
            self.expr()?;
        }
        let mut order_by = Vec::new();
        if self.eat_kw(Keyword::OrderBy) {
            loop {
                let expr = self.expr()?;
                let descending = if self.eat_kw(Keyword::Desc) {
                    true
                } else {
                    self.eat_kw(Keyword::Asc);
                    false
                };
                order_by.push(OrderItem { expr, descending });
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        let offset = if self.eat_kw(Keyword::Offset) {
            Some(self.count_literal("OFFSET")?)
        } else {
            None
        };
        let limit = if self.eat_kw(Keyword::Limit) {
            Some(self.count_literal("LIMIT")?)
        } else {
            None
        };
        Ok(Query {
            projections,
            from,
            joins,
            where_clause,
            group_by,
            having_without_group,
            order_by,
            offset,
            limit,
        })
    }

    fn count_literal(&mut self, clause: &str) -> Result<(i64, Span)> {
        let span = self.span();
        match self.peek() {
            Token::Int(v) | Token::Uint(v) => {
                self.advance();
                if *v > MAX_LIMIT as u64 {
                    return Err(Error::invalid(format!("Maximum {clause} exceeded"), span));
                }
                Ok((*v as i64, span))
            }
            _ => self.error(&format!("an integer literal after {clause}")),
        }
    }

    fn table_ref(&mut self) -> Result<TableRef> {
        let span = self.span();
        let path = match self.peek() {
            Token::QuotedIdent(s) | Token::Ident(s) => {
                self.advance();
                s.clone()
            }
            _ => return self.error("a table path such as [//path/to/table]"),
        };
        let alias = if self.eat_kw(Keyword::As) {
            Some(self.identifier("a table alias")?.0)
        } else if let Token::Ident(s) = self.peek() {
            self.advance();
            Some(s.clone())
        } else {
            None
        };
        Ok(TableRef {
            path,
            alias,
            span: span.to(self.prev_span()),
        })
    }

    fn qualified_name(&mut self) -> Result<(String, Span)> {
        let (first, span) = self.identifier("a column name")?;
        if self.is_punct(".") {
            self.advance();
            let (second, s2) = self.identifier("a column name")?;
            return Ok((format!("{first}.{second}"), span.to(s2)));
        }
        Ok((first, span))
    }

    fn projection(&mut self) -> Result<Projection> {
        let expr = self.expr()?;
        let alias = if self.eat_kw(Keyword::As) {
            Some(self.identifier("an alias name")?.0)
        } else {
            None
        };
        Ok(Projection { expr, alias })
    }

    // ---------------------------------------------------------------- expressions

    fn check_chain(&self, links: usize) -> Result<()> {
        if links > MAX_CHAIN {
            return Err(Error::invalid(
                "Maximum expression depth exceeded",
                self.span(),
            ));
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_PARSE_DEPTH {
            return Err(Error::invalid(
                "Maximum expression depth exceeded",
                self.span(),
            ));
        }
        Ok(())
    }

    /// Level 1: OR.
    fn expr(&mut self) -> Result<Expr> {
        self.enter()?;
        let r = self.or_expr();
        self.depth -= 1;
        r
    }

    fn or_expr(&mut self) -> Result<Expr> {
        let mut left = self.and_expr()?;
        let mut links = 0;
        while self.eat_kw(Keyword::Or) {
            links += 1;
            self.check_chain(links)?;
            let right = self.and_expr()?;
            left = binary(BinaryOp::Or, left, right);
        }
        Ok(left)
    }

    /// Level 2: AND.
    fn and_expr(&mut self) -> Result<Expr> {
        let mut left = self.not_expr()?;
        let mut links = 0;
        while self.eat_kw(Keyword::And) {
            links += 1;
            self.check_chain(links)?;
            let right = self.not_expr()?;
            left = binary(BinaryOp::And, left, right);
        }
        Ok(left)
    }

    /// Level 3: NOT.
    fn not_expr(&mut self) -> Result<Expr> {
        if self.is_kw(Keyword::Not) {
            let start = self.advance().span;
            self.enter()?;
            let operand = self.not_expr();
            self.depth -= 1;
            let operand = operand?;
            let span = start.to(operand.span);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op: UnaryOp::Not,
                    operand: Box::new(operand),
                },
                span,
            });
        }
        self.is_null_expr()
    }

    /// Level 4: IS [NOT] NULL.
    fn is_null_expr(&mut self) -> Result<Expr> {
        let operand = self.equality()?;
        if self.eat_kw(Keyword::Is) {
            let negated = self.eat_kw(Keyword::Not);
            self.expect_kw(Keyword::Null, "NULL")?;
            let span = operand.span.to(self.prev_span());
            return Ok(Expr {
                kind: ExprKind::IsNull {
                    operand: Box::new(operand),
                    negated,
                },
                span,
            });
        }
        Ok(operand)
    }

    /// Level 5: = != <>.
    fn equality(&mut self) -> Result<Expr> {
        let mut left = self.relational()?;
        loop {
            let op = match self.peek() {
                Token::Punct("=") => BinaryOp::Eq,
                Token::Punct("!=") | Token::Punct("<>") => BinaryOp::NotEq,
                _ => return Ok(left),
            };
            self.advance();
            let right = self.relational()?;
            left = binary(op, left, right);
        }
    }

    /// Level 6: < <= > >=, IN, BETWEEN, LIKE.
    ///
    /// As in YT's grammar, the text, pattern and escape of `[NOT] LIKE|ILIKE|RLIKE|REGEXP`
    /// are additive expressions, so the string match starts a relational chain (it is not
    /// the operand of another LIKE, IN or BETWEEN) and only `< <= > >=` may follow it.
    fn relational(&mut self) -> Result<Expr> {
        let mut left = self.bit_or()?;
        // Whether `left` may still be the text of a string match, and whether it is one.
        let mut like_text = !is_bare_bit_op(&left);
        let mut matched = false;
        loop {
            let string_match = |t: &Token| {
                matches!(
                    t,
                    Token::Keyword(
                        Keyword::Like | Keyword::Ilike | Keyword::Rlike | Keyword::Regexp,
                    )
                )
            };
            let negated = self.is_kw(Keyword::Not) && string_match(self.peek_at(1));
            if negated || string_match(self.peek()) {
                if !like_text {
                    return self.error(
                        "an operator (the text of LIKE is an additive expression; use parentheses)",
                    );
                }
                if negated {
                    self.advance();
                }
                left = self.like_tail(left, negated)?;
                (like_text, matched) = (false, true);
                continue;
            }
            let op = match self.peek() {
                Token::Punct("<") => BinaryOp::Less,
                Token::Punct("<=") => BinaryOp::LessOrEq,
                Token::Punct(">") => BinaryOp::Greater,
                Token::Punct(">=") => BinaryOp::GreaterOrEq,
                Token::Keyword(Keyword::In | Keyword::Between) if matched => {
                    return self.error("a comparison after LIKE (use parentheses)");
                }
                Token::Keyword(Keyword::In) => {
                    self.advance();
                    left = self.in_tail(left, false)?;
                    like_text = false;
                    continue;
                }
                Token::Keyword(Keyword::Between) => {
                    self.advance();
                    left = self.between_tail(left)?;
                    like_text = false;
                    continue;
                }
                Token::Keyword(Keyword::Not)
                    if matched && self.peek_at(1) == &Token::Keyword(Keyword::In) =>
                {
                    return self.error("a comparison after LIKE (use parentheses)");
                }
                Token::Keyword(Keyword::Not) if self.peek_at(1) == &Token::Keyword(Keyword::In) => {
                    self.advance();
                    self.advance();
                    left = self.in_tail(left, true)?;
                    like_text = false;
                    continue;
                }
                _ => return Ok(left),
            };
            self.advance();
            let right = self.bit_or()?;
            left = binary(op, left, right);
            like_text = false;
        }
    }

    fn in_tail(&mut self, operand: Expr, negated: bool) -> Result<Expr> {
        self.expect_punct("(")?;
        let mut items = Vec::new();
        if !self.is_punct(")") {
            items.push(self.additive()?);
            while self.eat_punct(",") {
                items.push(self.additive()?);
            }
        }
        self.expect_punct(")")?;
        let span = operand.span.to(self.prev_span());
        Ok(Expr {
            kind: ExprKind::In {
                operand: Box::new(operand),
                items,
                negated,
            },
            span,
        })
    }

    fn between_tail(&mut self, operand: Expr) -> Result<Expr> {
        // `x BETWEEN (lo AND hi, ...)` is the multi-range form; `x BETWEEN (1) AND (5)` is not,
        // so try the multi-range form first and fall back.
        if self.is_punct("(") {
            let save = self.pos;
            if let Ok(ranges) = self.multi_ranges() {
                let span = operand.span.to(self.prev_span());
                return Ok(Expr {
                    kind: ExprKind::Between {
                        operand: Box::new(operand),
                        ranges,
                    },
                    span,
                });
            }
            self.pos = save;
        }
        let lo = self.additive()?;
        self.expect_kw(Keyword::And, "AND in BETWEEN")?;
        let hi = self.additive()?;
        let span = operand.span.to(hi.span);
        Ok(Expr {
            kind: ExprKind::Between {
                operand: Box::new(operand),
                ranges: vec![(lo, hi)],
            },
            span,
        })
    }

    fn multi_ranges(&mut self) -> Result<Vec<(Expr, Expr)>> {
        self.expect_punct("(")?;
        let mut ranges = Vec::new();
        loop {
            let lo = self.additive()?;
            self.expect_kw(Keyword::And, "AND")?;
            let hi = self.additive()?;
            ranges.push((lo, hi));
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct(")")?;
        Ok(ranges)
    }

    fn like_tail(&mut self, operand: Expr, negated: bool) -> Result<Expr> {
        let kind = match self.advance().token {
            Token::Keyword(Keyword::Like) => LikeKind::Like,
            Token::Keyword(Keyword::Ilike) => LikeKind::Ilike,
            _ => LikeKind::Rlike,
        };
        let pattern = self.additive()?;
        let escape = if self.eat_kw(Keyword::Escape) {
            Some(Box::new(self.additive()?))
        } else {
            None
        };
        let span = operand.span.to(self.prev_span());
        Ok(Expr {
            kind: ExprKind::Like {
                operand: Box::new(operand),
                pattern: Box::new(pattern),
                escape,
                kind,
                negated,
            },
            span,
        })
    }

    fn left_assoc(
        &mut self,
        next: fn(&mut Self) -> Result<Expr>,
        ops: &[(&str, BinaryOp)],
    ) -> Result<Expr> {
        let mut left = next(self)?;
        let mut links = 0;
        'outer: loop {
            for (sym, op) in ops {
                if self.is_punct(sym) {
                    self.advance();
                    links += 1;
                    self.check_chain(links)?;
                    let right = next(self)?;
                    left = binary(*op, left, right);
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }

    /// Level 7: |.
    fn bit_or(&mut self) -> Result<Expr> {
        self.left_assoc(Self::bit_and, &[("|", BinaryOp::BitOr)])
    }

    /// Level 8: &.
    fn bit_and(&mut self) -> Result<Expr> {
        self.left_assoc(Self::shift, &[("&", BinaryOp::BitAnd)])
    }

    /// Level 9: << >>.
    fn shift(&mut self) -> Result<Expr> {
        self.left_assoc(
            Self::additive,
            &[("<<", BinaryOp::LeftShift), (">>", BinaryOp::RightShift)],
        )
    }

    /// Level 10: + - ||.
    fn additive(&mut self) -> Result<Expr> {
        self.left_assoc(
            Self::multiplicative,
            &[
                ("+", BinaryOp::Plus),
                ("-", BinaryOp::Minus),
                ("||", BinaryOp::Concat),
            ],
        )
    }

    /// Level 11: * / %.
    fn multiplicative(&mut self) -> Result<Expr> {
        self.left_assoc(
            Self::unary,
            &[
                ("*", BinaryOp::Multiply),
                ("/", BinaryOp::Divide),
                ("%", BinaryOp::Modulo),
            ],
        )
    }

    /// Level 12: unary + - ~.
    fn unary(&mut self) -> Result<Expr> {
        let op = match self.peek() {
            Token::Punct("+") => UnaryOp::Plus,
            Token::Punct("-") => UnaryOp::Minus,
            Token::Punct("~") => UnaryOp::BitNot,
            _ => return self.atom(),
        };
        let start = self.advance().span;
        self.enter()?;
        let operand = self.unary();
        self.depth -= 1;
        let operand = operand?;
        let span = start.to(operand.span);
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
        })
    }

    /// Level 13: literals, columns, calls, parentheses, tuples, CASE, TRANSFORM.
    fn atom(&mut self) -> Result<Expr> {
        let span = self.span();
        let lit = |l: Literal| {
            Ok(Expr {
                kind: ExprKind::Literal(l),
                span,
            })
        };
        match self.peek().clone() {
            Token::Int(v) => {
                self.advance();
                lit(Literal::Int(v as i64))
            }
            Token::Uint(v) => {
                self.advance();
                lit(Literal::Uint(v))
            }
            Token::Double(v) => {
                self.advance();
                lit(Literal::Double(v))
            }
            Token::Str(s) => {
                self.advance();
                lit(Literal::String(s))
            }
            Token::Keyword(Keyword::Null) => {
                self.advance();
                lit(Literal::Null)
            }
            Token::Keyword(Keyword::True) => {
                self.advance();
                lit(Literal::Boolean(true))
            }
            Token::Keyword(Keyword::False) => {
                self.advance();
                lit(Literal::Boolean(false))
            }
            Token::Keyword(Keyword::Inf) => {
                self.advance();
                lit(Literal::Double(f64::INFINITY))
            }
            Token::Keyword(Keyword::Case) => self.case_expr(),
            Token::Keyword(Keyword::Transform) => self.transform_expr(),
            Token::Punct("(") => {
                self.advance();
                let mut items = vec![self.aliased()?];
                while self.eat_punct(",") {
                    items.push(self.aliased()?);
                }
                self.expect_punct(")")?;
                let span = span.to(self.prev_span());
                if items.len() == 1 {
                    let mut e = items.pop().unwrap_or_else(|| unreachable_expr(span));
                    e.span = span;
                    Ok(e)
                } else {
                    Ok(Expr {
                        kind: ExprKind::Tuple(items),
                        span,
                    })
                }
            }
            Token::Ident(name) => {
                self.advance();
                if self.is_punct("(") {
                    self.advance();
                    let mut args = Vec::new();
                    if !self.is_punct(")") {
                        args.push(self.aliased()?);
                        while self.eat_punct(",") {
                            args.push(self.aliased()?);
                        }
                    }
                    self.expect_punct(")")?;
                    return Ok(Expr {
                        kind: ExprKind::Call { name, args },
                        span: span.to(self.prev_span()),
                    });
                }
                self.column_tail(name, span)
            }
            Token::QuotedIdent(name) => {
                self.advance();
                self.column_tail(name, span)
            }
            Token::Placeholder(name) => Err(Error::syntax(
                format!("placeholder {{{name}}} has no value"),
                span,
            )),
            _ => self.error("an expression"),
        }
    }

    fn column_tail(&mut self, first: String, span: Span) -> Result<Expr> {
        if self.is_punct(".") && matches!(self.peek_at(1), Token::Ident(_) | Token::QuotedIdent(_))
        {
            self.advance();
            let (name, s2) = self.identifier("a column name")?;
            return Ok(Expr {
                kind: ExprKind::Column {
                    table: Some(first),
                    name,
                },
                span: span.to(s2),
            });
        }
        Ok(Expr {
            kind: ExprKind::Column {
                table: None,
                name: first,
            },
            span,
        })
    }

    /// An expression optionally followed by `AS name` (inside parentheses and arguments).
    fn aliased(&mut self) -> Result<Expr> {
        let e = self.expr()?;
        if self.eat_kw(Keyword::As) {
            let (name, s) = self.identifier("an alias name")?;
            let span = e.span.to(s);
            return Ok(Expr {
                kind: ExprKind::Alias {
                    expr: Box::new(e),
                    name,
                },
                span,
            });
        }
        Ok(e)
    }

    fn case_expr(&mut self) -> Result<Expr> {
        let start = self.advance().span;
        let operand = if self.is_kw(Keyword::When) {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_kw(Keyword::When) {
            let w = self.expr()?;
            self.expect_kw(Keyword::Then, "THEN")?;
            let t = self.expr()?;
            whens.push((w, t));
        }
        if whens.is_empty() {
            return self.error("WHEN");
        }
        let otherwise = if self.eat_kw(Keyword::Else) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_kw(Keyword::End, "END")?;
        Ok(Expr {
            kind: ExprKind::Case {
                operand,
                whens,
                otherwise,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn transform_expr(&mut self) -> Result<Expr> {
        let start = self.advance().span;
        self.expect_punct("(")?;
        let operand = self.expr()?;
        self.expect_punct(",")?;
        let from = self.literal_list()?;
        self.expect_punct(",")?;
        let to = self.literal_list()?;
        let default = if self.eat_punct(",") {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_punct(")")?;
        Ok(Expr {
            kind: ExprKind::Transform {
                operand: Box::new(operand),
                from,
                to,
                default,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn literal_list(&mut self) -> Result<Vec<Expr>> {
        self.expect_punct("(")?;
        let mut items = vec![self.additive()?];
        while self.eat_punct(",") {
            items.push(self.additive()?);
        }
        self.expect_punct(")")?;
        Ok(items)
    }
}

fn unreachable_expr(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Literal(Literal::Null),
        span,
    }
}

/// `a | b`, `a & b`, `a << b` or `a >> b` not in parentheses (a parenthesised expression's
/// span starts at its parenthesis, before its left operand).
fn is_bare_bit_op(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Binary { op, left, .. } => {
            matches!(
                op,
                BinaryOp::BitOr | BinaryOp::BitAnd | BinaryOp::LeftShift | BinaryOp::RightShift
            ) && left.span.start == e.span.start
        }
        _ => false,
    }
}

fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    let span = left.span.to(right.span);
    Expr {
        kind: ExprKind::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        },
        span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::tokenize;

    fn parse(s: &str) -> Result<Query> {
        parse_query(&tokenize(s)?)
    }

    fn where_text(s: &str) -> String {
        format_expr(
            &parse(&format!("* from [//t] where {s}"))
                .unwrap()
                .where_clause
                .unwrap(),
        )
    }

    #[test]
    fn follows_yt_precedence() {
        assert_eq!(
            where_text("a + b * c = d or e and f"),
            "(((a)+((b)*(c)))=(d))OR((e)AND(f))"
        );
        assert_eq!(
            where_text("k & a + b << c | l >> m"),
            "((k)&(((a)+(b))<<(c)))|((l)>>(m))"
        );
        assert_eq!(where_text("not a < b = c > b"), "NOT(((a)<(b))=((c)>(b)))");
        assert_eq!(where_text("-a * +b"), "(-(a))*(+(b))");
    }

    #[test]
    fn string_matches_follow_yt_grammar() {
        assert_eq!(
            where_text("s || 't' not like 'a!%' || '%' escape '!' || ''"),
            "((s)||(\"t\")) NOT LIKE ((\"a!%\")||(\"%\")) ESCAPE ((\"!\")||(\"\"))"
        );
        assert_eq!(where_text("s ilike 'A%'"), "(s) ILIKE (\"A%\")");
        assert_eq!(where_text("s not rlike 'a.*'"), "(s) NOT RLIKE (\"a.*\")");
        // REGEXP is RLIKE.
        assert_eq!(where_text("s regexp 'a.*'"), "(s) RLIKE (\"a.*\")");
        // A comparison may follow; `=` and AND bind looser.
        assert_eq!(
            where_text("s like 'a' < b = c and d"),
            "((((s) LIKE (\"a\"))<(b))=(c))AND(d)"
        );
        assert_eq!(where_text("(a | b) like 'x'"), "((a)|(b)) LIKE (\"x\")");
        for bad in [
            "a | b like 'x'",
            "a << 1 like 'x'",
            "a < b like 'x'",
            "a like 'x' like 'y'",
            "a like 'x' not like 'y'",
            "a like 'x' in ('y')",
            "a like 'x' not in ('y')",
            "a like 'x' between 'a' and 'b'",
            "a like 'x' | 'y'",
            "a like 'x' escape '!' & 'y'",
        ] {
            let e = parse(&format!("* from [//t] where {bad}")).unwrap_err();
            assert!(e.to_string().contains("syntax error"), "{bad}: {e}");
        }
    }

    #[test]
    fn parses_clauses() {
        let q = parse("select a as x, sum(b) from [//t] t left join [//u] as u using a and u.c = 1 \
                       where x > 1 group by x with totals having sum(b) > 2 order by x desc offset 1 limit 2")
            .unwrap();
        assert_eq!(q.projections.as_ref().unwrap().len(), 2);
        assert_eq!(q.from.alias.as_deref(), Some("t"));
        assert!(q.joins[0].left && q.joins[0].predicate.is_some());
        assert_eq!(
            q.group_by.as_ref().unwrap().totals,
            TotalsMode::BeforeHaving
        );
        assert!(q.order_by[0].descending);
        assert_eq!(q.offset.unwrap().0, 1);
        assert_eq!(q.limit.unwrap().0, 2);
    }

    #[test]
    fn multi_range_between_and_single() {
        let q = parse("* from [//t] where (a, b) between ((1) and (1, 3), 5 and 6)").unwrap();
        match q.where_clause.unwrap().kind {
            ExprKind::Between { ranges, .. } => assert_eq!(ranges.len(), 2),
            other => panic!("{other:?}"),
        }
        let q = parse("* from [//t] where a between (1) and (5)").unwrap();
        match q.where_clause.unwrap().kind {
            ExprKind::Between { ranges, .. } => assert_eq!(ranges.len(), 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_limit_before_offset_with_position() {
        let e = parse("* from [//t] limit 5 offset 2").unwrap_err();
        assert!(e.to_string().contains("Error while parsing query"));
        assert_eq!(e.span().unwrap().start, 21);
        // YT's tests match "syntax error", from the parser and the lexer alike.
        for bad in [
            "* from [//t] limit 5 offset 2",
            "k from [//t] wher k = 1",
            "k from [//t] where k = 'open",
            "k from [//t] where k = ?",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("syntax error, "), "{bad}: {e}");
            assert!(e.contains(" at position "), "{bad}: {e}");
        }
        assert!(parse("case x end as m from [//t]").is_err());
        assert!(parse("* from [//t] limit 9223372036854775807")
            .unwrap_err()
            .to_string()
            .contains("Maximum LIMIT exceeded"));
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_crash() {
        let parens = format!(
            "* from [//t] where {}a{}",
            "(".repeat(10_000),
            ")".repeat(10_000)
        );
        assert!(parse(&parens)
            .unwrap_err()
            .to_string()
            .contains("Maximum expression depth exceeded"));
        let minus = format!("* from [//t] where {}a", "-".repeat(10_000));
        assert!(parse(&minus).is_err());
        let chain = format!("* from [//t] where a{}", " + a".repeat(100_000));
        assert!(parse(&chain)
            .unwrap_err()
            .to_string()
            .contains("Maximum expression depth exceeded"));
    }

    #[test]
    fn aliases_nest() {
        let q = parse("((1 as x) + x) as y from [//t]").unwrap();
        assert_eq!(q.projections.unwrap()[0].alias.as_deref(), Some("y"));
    }
}
