//! Query structure: `SELECT` projections, `FROM`, joins, `WHERE`, `GROUP BY`, `HAVING`,
//! `ORDER BY`, `OFFSET` and `LIMIT`, in YT's order.

use super::{Parser, MAX_LIMIT};
use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::lexer::{Keyword, Token};

impl Parser<'_> {
    pub(super) fn query(&mut self) -> Result<Query> {
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
}
